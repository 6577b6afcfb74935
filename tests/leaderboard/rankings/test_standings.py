"""The home page reads standings kept at ingest: every figure it shows equals what ranking each problem per request
(the previous home page) computed for the same data, the rows a rebuild writes equal those recording results one by
one leaves, recording a result twice changes nothing, and the page makes the same few queries at any size."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.catalogue import selectors as catalogue
from leaderboard.management.commands.seed_demo import clear_demo, seed_demo
from leaderboard.models import CategoryStanding, ModelRun, Problem, ProblemStanding, Submission
from leaderboard.rankings import generations, metrics, overview
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document

pytestmark = pytest.mark.django_db
GPU4, GPU8, CPU = "h200-nvlink-4", "h200-nvlink-8", "cpu-gloo-4"
HOME_QUERIES = 10  # the most queries the home page may make, on any amount of data


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _record(user, problem_id, profile, speedup, *, variant="", revision=TIMING_PROTOCOL_REVISION, verdict="passed"):
    problem = Problem.objects.get(pk=problem_id)
    source = CORRECT.read_text() + (f"\n_VARIANT = {variant!r}\n" if variant else "")
    submission = submission_create(user=user, problem=problem_id, profile=profile, filename="s.py", source=source)
    document = (
        passed_document(speedup, version=problem.version, problem_id=problem_id)
        if verdict == "passed"
        else failed_document(verdict)
    )
    if revision is not None and isinstance(document.get("timing"), dict):
        document["timing"]["protocol_revision"] = revision
    result_record(submission_id=submission.pk, document=document)
    return submission


def _computed_per_request(problems: list[Problem]):
    """The previous home page: each problem ranked now (``selectors.problem_ranking`` through ``overview``)."""
    profiles = overview.ranking_profiles(
        problems, {p.id: catalogue.problem_default_profile(problem=p) for p in problems}
    )
    return profiles, *overview.category_summaries((p, profiles[p.id]) for p in problems)


def _line(item: overview.ProblemLeader):
    lead = item.leader
    return (
        item.profile,
        item.solutions,
        lead and (overview.entry_name(lead), lead.submission_id, lead.model_run_id, lead.username, lead.speedup),
    )


def _assert_home_equals_per_request(problems: list[Problem], *, whole_catalogue: bool = True):
    profiles, summaries, leaders = _computed_per_request(problems)
    stored_profiles, stored = overview.stored_leaders(
        problems, {p.id: catalogue.problem_default_profile(problem=p) for p in problems}
    )
    assert stored_profiles == profiles
    assert {pid: _line(x) for pid, x in stored.items()} == {pid: _line(x) for pid, x in leaders.items()}
    assert overview.category_lines(problems, stored, whole_catalogue=whole_catalogue) == summaries
    return summaries, leaders


def _sections(html: str) -> list[str]:
    return re.findall(r'<section class="category">.*?</section>', html, re.S)


def _home_as_computed_per_request(client, query: str = "") -> str:
    """The home page's categories as the previous view rendered them (same template, figures ranked now)."""
    from django.template.loader import render_to_string

    from leaderboard.web.links import url_prefixes

    filters = catalogue.problem_filters(dict(x.split("=") for x in query.split("&")) if query else None)
    problems = list(filters.qs)
    _, summaries, leaders = _computed_per_request(problems)
    categories = catalogue.problem_list_by_category(problems=filters.qs)
    return render_to_string(
        "home.html",
        {
            "categories": [(c, summaries.get(c.key)) for c in categories],
            "leaders": leaders,
            "search": filters.form,
            "filtered": bool(query),
            "matches": len(problems),
            **url_prefixes(),
        },
    )


def test_every_figure_on_the_home_page_equals_ranking_each_problem_per_request(client, django_user_model):
    seed_demo(runs=12, problems=18, attempts=2, users=4, seed=7, log=lambda _: None)
    problems = list(catalogue.problem_list())
    # Results recorded through the service on top of the seeded ones: a new leader on a demo problem, an older
    # protocol revision (ranked apart, never mixed with the current one) and a CPU result (verdicts only).
    ada = django_user_model.objects.create_user("ada-standings")
    demo = [p for p in problems if p.suite == "demo"]
    _record(ada, demo[0].id, GPU4, 50.0)
    _record(ada, demo[1].id, GPU8, 40.0, revision=TIMING_PROTOCOL_REVISION - 1)
    _record(ada, demo[2].id, CPU, 30.0)
    summaries, leaders = _assert_home_equals_per_request(problems)
    assert sum(1 for x in leaders.values() if x.leader) >= len(demo) // 2, "the seeded data has leaders to compare"
    assert leaders[demo[0].id].leader.username == "ada-standings" and leaders[demo[0].id].profile == GPU4

    html = client.get("/").content.decode()
    assert _sections(html) == _sections(_home_as_computed_per_request(client)) and _sections(html)
    category = demo[0].category
    filtered = client.get(f"/?category={category}").content.decode()
    assert _sections(filtered) == _sections(_home_as_computed_per_request(client, f"category={category}"))
    _assert_home_equals_per_request([p for p in problems if p.category == category], whole_catalogue=False)


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
                "leader_submission_id",
                "leader_user_id",
                "leader_username",
                "leader_model_run_id",
                "leader_model",
                "best_speedup",
            )
        ),
        sorted(
            CategoryStanding.objects.values_list(
                "category", "leader", "leader_firsts", "best_speedup", "best_problem_id", "solutions", "problems"
            )
        ),
        sorted(ModelRun.objects.values_list("pk", "protocol_label")),
    )


def test_rebuilding_from_the_results_gives_the_rows_recording_them_one_by_one_left(problems, django_user_model):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    for speedup in (1.0, 1.2, 4.0):  # one file evaluated three times: pooled into one solution
        _record(ada, ALL_REDUCE, GPU4, speedup)
    _record(bob, ALL_REDUCE, GPU4, 2.0, variant="bob")
    _record(bob, ALL_REDUCE, GPU8, 3.0, variant="bob")
    _record(bob, ALL_REDUCE, GPU8, 9.0, variant="old", revision=None)  # a revision not recorded: ranked apart
    _record(ada, ALL_REDUCE, CPU, 5.0)
    _record(ada, ALL_REDUCE, GPU4, 0.0, verdict="wrong_output")  # not passed: ranks nowhere
    fx.make_run(bob)  # a model run's attempts on the fixture's problems and profile
    incremental = _state()
    assert incremental[0] and incremental[1] and all(label for _, label in incremental[2])
    ModelRun.objects.update(protocol_label="")  # as rows stored before runs kept their label
    call_command("rebuild_standings")
    assert _state() == incremental
    _assert_home_equals_per_request(list(catalogue.problem_list()))


def test_recording_the_same_result_twice_changes_no_standing(problems, user):
    submission = _record(user, ALL_REDUCE, GPU4, 2.5)
    before = _state()
    problem = Problem.objects.get(pk=ALL_REDUCE)
    again = result_record(submission_id=submission.pk, document=passed_document(9.0, version=problem.version))
    assert again.speedup == 2.5 and _state() == before  # the first result stands; the standings with it
    row = ProblemStanding.objects.get(problem_id=ALL_REDUCE, profile=GPU4)
    assert (row.passed, row.solutions, row.leader_submission_id, row.best_speedup) == (
        1,
        1,
        submission.pk,
        pytest.approx(2.5),
    )


def test_a_failed_attempt_leaves_the_standings_as_they_were(problems, user):
    _record(user, ALL_REDUCE, GPU4, 2.5)
    before = _state()
    _record(user, ALL_REDUCE, GPU4, 0.0, verdict="timeout")
    assert _state() == before
    assert Submission.objects.filter(problem_id=ALL_REDUCE).count() == 2


def _home_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def test_the_home_page_makes_the_same_few_queries_at_any_size(client):
    seed_demo(runs=3, problems=8, attempts=2, users=2, seed=1, log=lambda _: None)
    small = _home_queries(client)
    clear_demo()
    seed_demo(runs=30, problems=27, attempts=3, users=6, seed=2, log=lambda _: None)
    large = _home_queries(client)
    assert large == small <= HOME_QUERIES


def test_a_problem_leaving_the_catalogue_leaves_its_categorys_line(problems, user):
    from leaderboard.catalogue.services import problems_sync
    from problems.registry import catalogue as registry

    _record(user, ALL_REDUCE, GPU4, 3.0)
    category = Problem.objects.get(pk=ALL_REDUCE).category
    line = CategoryStanding.objects.get(pk=category)
    assert (line.leader, line.best_problem_id, line.solutions) == ("ada", ALL_REDUCE, 1)
    problems_sync(problems={pid: p for pid, p in registry().items() if pid != ALL_REDUCE})  # all_reduce retired
    line = CategoryStanding.objects.get(pk=category)
    assert (line.leader, line.best_problem_id, line.solutions) == ("", "", 0)
    _assert_home_equals_per_request(list(catalogue.problem_list()))


def test_a_result_refreshes_its_one_standing_and_its_categorys_line_only_when_the_problems_line_moved(
    problems, django_user_model
):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    _record(ada, ALL_REDUCE, GPU4, 4.0)  # GPU4 speaks for the problem: its line moved
    _record(bob, ALL_REDUCE, GPU4, 2.0, variant="bob")

    def category_writes(*args, **kwargs) -> tuple[list[str], int]:
        with CaptureQueriesContext(connection) as queries:
            _record(*args, **kwargs)
        sql = [q["sql"] for q in queries.captured_queries]
        standings = [s for s in sql if s.startswith('UPDATE "leaderboard_problemstanding"')]
        return [s for s in sql if "leaderboard_categorystanding" in s], len(standings)

    # A repeat of bob's file, pooled into a row that does not lead: the problem's line stays, so does the category's.
    writes, standings_written = category_writes(bob, ALL_REDUCE, GPU4, 2.1, variant="bob")
    assert writes == [] and standings_written == 1
    # A result of a revision the page does not show by default, on the same profile: the same.
    writes, _ = category_writes(bob, ALL_REDUCE, GPU4, 50.0, variant="old", revision=TIMING_PROTOCOL_REVISION - 1)
    assert writes == []
    # A new leader moves it.
    writes, _ = category_writes(bob, ALL_REDUCE, GPU4, 9.0, variant="fast")
    assert writes
    incremental = _state()
    call_command("rebuild_standings")
    assert _state() == incremental
    _assert_home_equals_per_request(list(catalogue.problem_list()))


def test_a_runs_stored_protocol_label_is_the_one_its_pages_computed_and_they_read_the_same_without_it(
    problems, client, django_user_model
):
    seed_demo(runs=6, problems=6, attempts=2, users=2, seed=11, log=lambda _: None)
    run = fx.make_run(django_user_model.objects.create_user("ada-protocol"))
    runs = list(ModelRun.objects.order_by("pk"))
    assert run.protocol_label and len(runs) == 7
    for each in runs:  # written when the run was created (the service, the seed), as the pages wrote it per row
        assert each.protocol_label == metrics.Protocol.of_run(each).label()
    pages = ("/runs/", "/runs/?format=csv", "/runs/?format=json", "/api/rankings/model-runs/", f"/runs/{run.pk}/")
    stored = [client.get(path).content for path in pages]
    labels = {each.protocol_label.encode() for each in runs} | {
        json.dumps(each.protocol_label)[1:-1].encode()
        for each in runs  # as JSON writes it
    }
    assert all(any(label in page for label in labels) for page in stored)  # every page writes protocols
    ModelRun.objects.update(protocol_label="")  # rows written before the label was kept: computed per row
    generations.rankings_changed()  # (no cached page answers)
    assert [client.get(path).content for path in pages] == stored
