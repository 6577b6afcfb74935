"""A problem's ranking is stored as rows when results are recorded: every row the problem page, its exports and the
API show equals what ranking the problem's evaluations per request (the previous code, ``problem_ranking``) gives
for the same data, sorted and paged by the database; a rebuild writes the rows recording results one by one left,
and the page makes the same few queries whatever the number of evaluations."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import Problem, ProblemStanding, StandingEntry
from leaderboard.rankings import problem_tables, ranking_rows, selectors, tables
from leaderboard.submissions import verification
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db
GPU4, CPU = "h200-nvlink-4", "cpu-gloo-4"
PROBLEM_PAGE_QUERIES = 10  # the most queries the problem page may make, on any amount of data


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _record(user, problem_id, profile, speedup, *, variant="", revision=TIMING_PROTOCOL_REVISION):
    problem = Problem.objects.get(pk=problem_id)
    source = CORRECT.read_text() + (f"\n_VARIANT = {variant!r}\n" if variant else "")
    submission = submission_create(user=user, problem=problem_id, profile=profile, filename="s.py", source=source)
    document = passed_document(speedup, version=problem.version, problem_id=problem_id)
    document["timing"]["protocol_revision"] = revision
    result_record(submission_id=submission.pk, document=document)
    return submission


def _standings():
    return list(
        ProblemStanding.objects.select_related("problem").order_by(
            "problem_id", "profile", "problem_version", "protocol_revision"
        )
    )


def _stored(standing: ProblemStanding):
    return ranking_rows.ranking_entries(
        ranking_rows.problem_ranking_rows(
            problem=standing.problem,
            profile=standing.profile,
            version=standing.problem_version,
            revision=standing.protocol_revision or None,
        )
    )


def _computed(standing: ProblemStanding):
    return selectors.problem_ranking(
        problem=standing.problem,
        profile=standing.profile,
        version=standing.problem_version,
        revision=standing.protocol_revision or None,
    )


def _export(client, url: str) -> list[dict]:
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return json.loads(body)["rows"]


def test_every_stored_row_equals_the_ranking_computed_per_request_on_seeded_data(client, problems, django_user_model):
    seed_demo(runs=12, problems=18, attempts=2, users=4, seed=7, log=lambda _: None)
    ada = django_user_model.objects.create_user("ada-rows")
    first = _record(ada, ALL_REDUCE, GPU4, 3.0)
    _record(ada, ALL_REDUCE, GPU4, 3.3)  # the same code again: pooled into one row
    _record(ada, ALL_REDUCE, GPU4, 1.5, variant="older", revision=TIMING_PROTOCOL_REVISION - 1)
    _record(ada, ALL_REDUCE, CPU, 9.0)  # verdicts only: no speed, no rank
    # A re-measurement settles after the row was stored: its verdict is read with the page.
    check = verification.remeasure(first.__class__.objects.select_related("problem", "user").get(pk=first.pk))
    result_record(submission_id=check.pk, document=passed_document(3.1, problem_id=ALL_REDUCE))

    standings = [s for s in _standings() if s.solutions]
    assert len(standings) > 20, "the seeded data has rankings to compare"
    verified = 0
    for standing in standings:
        stored, computed = _stored(standing), _computed(standing)
        assert stored == computed, standing
        verified += sum(1 for e in stored if e.verification is not None)
    assert verified >= 2, "re-measured rows are compared too"

    table = problem_tables.problem_ranking_table()
    for standing in standings[:8] + [s for s in standings if s.problem_id == ALL_REDUCE]:
        computed = _computed(standing)
        base = (
            f"/problems/{standing.problem_id}/?profile={standing.profile}&version={standing.problem_version}"
            f"&revision={standing.protocol_revision or 'none'}"
        )
        # The export (every column of the table) equals the previous code's rows, in each order a reader may ask.
        for sort in ("", "-evaluations", "who", "-speedup", "submitted", "-roofline_fraction"):
            expected = table.records(table.order(computed, sort or None))
            assert _export(client, f"{base}&format=json&sort={sort}") == json.loads(json.dumps(expected, default=str))
        page = client.get(f"{base}&per_page=5&page=2").content.decode()
        shown = [int(x) for x in re.findall(r'<tr data-entry="(\d+)" data-evaluations', page)]
        assert shown == [e.submission_id for e in tables.paginate(computed, number=2, per_page=5).object_list]
        # The best solutions are the ranking's first three whatever page, order or page size the table shows.
        for query in ("&per_page=5&page=2", "&per_page=1", "&sort=-evaluations"):
            best = re.search(r'<ol class="best-solutions">(.*?)</ol>', client.get(base + query).content.decode(), re.S)
            assert [int(x) for x in re.findall(r"/submissions/(\d+)/\">result</a>", best.group(1))] == [
                e.submission_id for e in computed[:3]
            ]
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU4}&page_size=2").json()
    computed = selectors.problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile=GPU4)
    assert api["count"] == len(computed) and [e["submission_id"] for e in api["entries"]] == [
        e.submission_id for e in computed[:2]
    ]
    assert api["entries"][0]["speedup"] == pytest.approx(computed[0].speedup)


def _rows():
    return sorted(
        StandingEntry.objects.values_list(
            "standing__problem_id",
            "standing__profile",
            "standing__problem_version",
            "standing__protocol_revision",
            "rank",
            "rank_best",
            "rank_worst",
            "username",
            "user_id",
            "submission_id",
            "submission_ids",
            "workers",
            "speedup",
            "speedup_ci_low",
            "speedup_ci_high",
            "baseline_median_us",
            "solution_median_us",
            "roofline_fraction",
            "model_run_id",
            "model",
            "protocol",
            "evaluations",
            "source_key",
            "estimator",
            "protocol_revision",
            "problem_version",
            "timed",
            "who_key",
            "protocol_key",
        ),
        key=str,
    )


def test_rebuilding_writes_the_rows_that_recording_results_one_by_one_left_and_a_replay_changes_none(
    problems, django_user_model
):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    for speedup in (1.0, 1.2, 4.0):
        _record(ada, ALL_REDUCE, GPU4, speedup)
    last = _record(bob, ALL_REDUCE, GPU4, 2.0, variant="bob")
    _record(bob, ALL_REDUCE, CPU, 2.0, variant="bob")
    incremental = _rows()
    assert len(incremental) == 3
    result_record(submission_id=last.pk, document=passed_document(2.0))  # the same result delivered again
    assert _rows() == incremental
    StandingEntry.objects.all().delete()
    call_command("rebuild_standings")
    assert _rows() == incremental


def test_the_problem_page_makes_the_same_few_queries_whatever_the_number_of_evaluations(
    client, problems, django_user_model
):
    users = [django_user_model.objects.create_user(f"u{i}") for i in range(24)]
    counts = []
    for size in (3, 24):
        for i, user in enumerate(users[:size]):
            if not StandingEntry.objects.filter(username=user.username).exists():
                _record(user, ALL_REDUCE, GPU4, 1.0 + i / 10, variant=user.username)
        assert StandingEntry.objects.count() == size
        with CaptureQueriesContext(connection) as queries:
            page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU4}&per_page=10")
        assert page.status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1] <= PROBLEM_PAGE_QUERIES, counts
