"""What the ranking of runs and a problem page read as kept at ingest equals what they computed per request before:
the values the runs' filters offer (those some run has, through uploads, edits and deletions), each problem's best
speedup over time (from its ranking's rows), its speedups' distribution and its measured roofline (the newest
evaluation's); a rebuild writes the rows recording results one by one left, and recording a result twice changes none
of them."""

from __future__ import annotations

import statistics

import pytest
from django.core.management import call_command

from evaluator.contract.profiles import PROFILES
from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import (
    MeasuredBaseline,
    MeasuredRoofline,
    ModelRun,
    Problem,
    ProblemStanding,
    Result,
    RunFilterChoice,
)
from leaderboard.rankings import overview, ranking_rows, run_selectors, selectors
from leaderboard.submissions.results import result_record
from tests.leaderboard.remigrating import rebuilt_and_refilled
from leaderboard.submissions.services import submission_create
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import CORRECT, failed_document, passed_document

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _choices_from_the_runs():
    """What the filters offered before: read from every run per request."""
    seen = set(ModelRun.objects.order_by().values_list("profile", "precision", "k").distinct())
    return sorted(seen)


def _stored_choices():
    return sorted(RunFilterChoice.objects.values_list("profile", "precision", "k"))


def _record(user, problem, profile, speedup, *, variant="", roofline=None, verdict="passed"):
    source = CORRECT.read_text() + (f"\n_VARIANT = {variant!r}\n" if variant else "")
    submission = submission_create(user=user, problem=problem.id, profile=profile, filename="s.py", source=source)
    document = (
        passed_document(speedup, version=problem.version, problem_id=problem.id)
        if verdict == "passed"
        else failed_document(verdict)
    )
    if roofline is not None:
        document["roofline"] = roofline
    result_record(submission_id=submission.pk, document=document)
    return submission


def _roofline_as_queried(problem: Problem, profile: str):
    """What the problem page read before: the newest evaluation's roofline of the problem's version on ``profile``."""
    return (
        Result.objects.filter(
            submission__problem=problem,
            submission__profile=profile,
            problem_version=problem.version,
            document__roofline__time_us__isnull=False,
        )
        .order_by("-recorded_at")
        .values_list("document__roofline__time_us", "document__roofline__bound")
        .first()
    )


def _stored_roofline(problem: Problem, profile: str):
    return (
        MeasuredRoofline.objects.filter(problem=problem, profile=profile, problem_version=problem.version)
        .values_list("time_us", "bound")
        .first()
    )


def _baseline_as_queried(problem: Problem, profile: str):
    """What the problem page read before: how many evaluations of the problem's version timed the baseline on
    ``profile`` and the median of their medians, over every one of them."""
    values = sorted(
        Result.objects.filter(
            submission__problem=problem,
            submission__profile=profile,
            problem_version=problem.version,
            baseline_median_us__isnull=False,
        ).values_list("baseline_median_us", flat=True)
    )
    return len(values), (statistics.median(values) if values else None)


def _history_from_rows(problem: Problem, profile: str):
    """What the problem page's chart read before: the stored rows of the default ranking, improvements kept."""
    return overview.best_over_time(ranking_rows.problem_ranking_rows(problem=problem, profile=profile))


def _state():
    return (
        sorted(
            ProblemStanding.objects.values_list(
                "problem_id",
                "profile",
                "problem_version",
                "protocol_revision",
                "passed",
                "solutions",
                "history",
                "speedups",
            ),
            key=str,
        ),
        sorted(
            MeasuredRoofline.objects.values_list(
                "problem_id", "profile", "problem_version", "time_us", "bound", "recorded_at", "submission_id"
            ),
            key=str,
        ),
        _stored_choices(),
        sorted(
            MeasuredBaseline.objects.values_list(
                "problem_id", "profile", "problem_version", "evaluations", "median_us"
            ),
            key=str,
        ),
    )


def _assert_pages_read_what_was_computed(problems: list[Problem]):
    checked = timed = 0
    for problem in problems:
        for profile in PROFILES:
            assert _stored_roofline(problem, profile) == _roofline_as_queried(problem, profile)
            baseline = selectors.problem_baseline(problem=problem, profile=profile)
            assert (baseline.evaluations, baseline.median_us) == _baseline_as_queried(problem, profile)
            timed += bool(baseline.evaluations)
            measured = selectors.problem_measurement(problem=problem, profile=profile)
            assert measured.choices == selectors.problem_ranking_choices(problem=problem, profile=profile)
            stored = overview.problem_best_over_time(problem=problem, profile=profile, measured=measured)
            assert stored == _history_from_rows(problem, profile)
            # and the ranking computed now (the rows' source) gives the same points
            ranked = selectors.problem_ranking(problem=problem, profile=profile)
            assert stored == overview.best_over_time(ranked)
            assert (
                measured.solutions
                == ranking_rows.problem_ranking_rows(
                    problem=problem, profile=profile, version=measured.version, revision=measured.revision
                ).count()
            )
            # the distribution's speedups, as the per-request query read them for the ranking shown
            assert measured.speedups == selectors.problem_speedups(
                problem=problem, profile=profile, version=measured.version, revision=measured.revision
            )
            checked += bool(stored)
    assert checked, "some problem has a best speedup over time to compare"
    assert timed, "some problem has a baseline's time to compare"
    assert _stored_choices() == _choices_from_the_runs()


def test_stored_figures_equal_those_computed_per_request_and_a_rebuild_equals_recording(django_user_model):
    seed_demo(runs=10, problems=6, attempts=2, users=3, seed=5, log=lambda _: None)
    problems = list(Problem.objects.filter(is_active=True).order_by("id"))
    demo = [p for p in problems if p.suite == "demo"]
    ada = django_user_model.objects.create_user("ada-figures")
    gpu = next(p for p in PROFILES if p.startswith("h200") and demo[0].supports(p))
    # A new best, a slower one, an evaluation whose roofline is null, a failed one with a roofline, and a
    # roofline that is newer than every seeded one: each as the per-request code read it.
    _record(ada, demo[0], gpu, 80.0, roofline={"time_us": 3.5, "bound": "memory", "solution_fraction": 0.1})
    _record(ada, demo[0], gpu, 0.5, variant="slow", roofline={"time_us": 4.5, "bound": "link"})
    _record(ada, demo[1], gpu, 2.0, roofline={"time_us": None, "bound": "link"})
    _record(ada, demo[2], gpu, 0.0, verdict="wrong_output")
    _assert_pages_read_what_was_computed(problems)
    assert _stored_roofline(demo[0], gpu) == (4.5, "link")
    assert _stored_roofline(demo[1], gpu) == (None, "link")
    measured = selectors.problem_measurement(problem=demo[0], profile=gpu)
    assert overview.history_points(measured.default_history)[-1].speedup == pytest.approx(80.0)

    incremental = _state()
    call_command("rebuild_standings")
    assert _state() == incremental
    _assert_pages_read_what_was_computed(problems)


def test_recording_the_same_result_twice_changes_no_stored_figure(problems, user):
    problem = Problem.objects.get(pk="collectives/all_reduce")
    profile = "h200-nvlink-4"
    submission = _record(user, problem, profile, 2.5, roofline={"time_us": 7.0, "bound": "link"})
    before = _state()
    again = passed_document(9.0, version=problem.version, problem_id=problem.id)
    again["roofline"] = {"time_us": 1.0, "bound": "memory"}
    result_record(submission_id=submission.pk, document=again)
    assert _state() == before
    assert _stored_roofline(problem, profile) == (7.0, "link")


def test_the_filters_offer_what_some_run_has_through_uploads_edits_and_deletions(django_user_model, problems):
    seed_demo(runs=6, problems=4, attempts=2, users=2, seed=4, log=lambda _: None)  # written in bulk, then rebuilt
    assert _stored_choices() == _choices_from_the_runs() and _stored_choices()
    bob = django_user_model.objects.create_user("bob-filters")
    run = fx.make_run(bob, record=False)  # an upload: its values are offered in the upload's transaction
    assert (run.profile, run.precision, run.k) in _stored_choices()
    assert _stored_choices() == _choices_from_the_runs()
    form = run_selectors.model_run_filters({"profile": run.profile}).form
    assert (run.profile, run.profile) in form.fields["profile"].choices

    run.k = 9  # an edit: the old value goes when no other run has it, the new one is offered
    run.save()
    assert _stored_choices() == _choices_from_the_runs()
    run.precision = "fp4"
    run.save(update_fields=["precision"])
    assert _stored_choices() == _choices_from_the_runs()
    assert (run.profile, "fp4", 9) in _stored_choices()
    run.state = ModelRun.State.FINISHED
    run.save(update_fields=["state"])  # progress: nothing the filters offer changes
    assert _stored_choices() == _choices_from_the_runs()

    run.delete()
    assert (run.profile, "fp4", 9) not in _stored_choices()
    assert _stored_choices() == _choices_from_the_runs()
    some = ModelRun.objects.filter(is_demo=True).order_by("pk").first()
    some.user.delete()  # a user's deletion takes their runs with it
    assert _stored_choices() == _choices_from_the_runs()
    ModelRun.objects.all().delete()
    assert _stored_choices() == [] == _choices_from_the_runs()


@pytest.mark.django_db(transaction=True)
def test_the_migration_that_adds_them_fills_what_a_rebuild_writes():
    rebuilt, refilled = rebuilt_and_refilled("0012_evaluated_source", _state)  # 0012: before the rows and column
    assert all(rebuilt) and any(row[-1] for row in rebuilt[0]), "histories, rooflines and choices to compare"
    assert refilled == rebuilt


def test_a_standing_written_without_its_history_as_the_previous_release_wrote_it_reads_as_none(problems):
    """During a deployment a web process of the release before 0013 may still insert a standing: it names no
    history, which the database fills with an empty one."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO leaderboard_problemstanding (problem_id, profile, problem_version, protocol_revision, passed,"
            " solutions, leader_username, leader_model, updated_at) VALUES (%s, 'h200-nvlink-4', 1, 9, 1, 0, '', '',"
            " now())",
            ["collectives/all_reduce"],
        )
    row = ProblemStanding.objects.get(problem_id="collectives/all_reduce", profile="h200-nvlink-4")
    assert row.history == []
