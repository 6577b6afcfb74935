"""The overall ranking's counts and rank ranges as read from the rows kept at ingest (``RankingEnds``) equal what the
ranking computed over every run per request, under each filter alone and together and for the API's owner; the rows
kept through uploads, scoring, publishing, edits and deletions equal a rebuild's, a replay changes none, and the
migration that adds them fills what a rebuild writes."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RankingEnds
from leaderboard.rankings import rank_ends, run_rows, run_selectors, standing
from leaderboard.rankings.services import run_score_refresh
from leaderboard.submissions.publishing import model_run_publish
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.remigrating import rebuilt_and_refilled

pytestmark = pytest.mark.django_db

SORTS = [None, "-pass_at_k", "-fast_1", "fast_1_5", "-fast_2", "-speedup", "model"]


@pytest.fixture
def seeded():
    seed_demo(runs=30, problems=8, attempts=2, users=4, seed=11, log=lambda _: None)
    for run in ModelRun.objects.order_by("pk").select_related("user")[::4]:  # some published, through the service
        model_run_publish(run_id=run.pk, user=run.user, published=True)
    return list(ModelRun.objects.order_by("pk"))


def _stored():
    names = [f.name for f in RankingEnds._meta.concrete_fields if f.name != "id"]
    rows = RankingEnds.objects.values_list(*names)
    return sorted(tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows)


def _rebuilt():
    """The rows a rebuild writes, computed from the runs as they stand (without writing them)."""
    names = [f.name for f in RankingEnds._meta.concrete_fields if f.name != "id"]
    rows = rank_ends.ends_rows(ModelRun.objects.order_by().values_list(*rank_ends.RUN_COLUMNS))
    return sorted(tuple(record[name] for name in names) for record in rows)


def _filter_sets(runs):
    """Each filter alone (every value some run has), some together, all six of one run, one matching no run, and
    values the page ignores (not offered)."""
    data = [None, {"published": "1"}, {"mode": "zero-shot", "published": "1"}, {"precision": "no-such"}]
    for name in ("profile", "precision", "mode", "k"):
        data += [{name: str(v)} for v in sorted({str(getattr(r, name)) for r in runs if getattr(r, name)})]
    one = runs[0]
    data.append({"profile": one.profile, "mode": one.mode, "k": str(one.k)})
    data.append({"profile": one.profile, "precision": one.precision, "mode": one.mode, "k": str(one.k)})
    published = next(r for r in runs if r.published_at is not None)
    data.append({"profile": published.profile, "precision": published.precision, "mode": published.mode, "k": "2"})
    data.append({"profile": published.profile, "mode": published.mode, "published": "1"})
    return data


def test_counts_and_rank_ranges_read_at_ingest_equal_those_computed_over_every_run(seeded):
    users = [None, *sorted({r.user for r in seeded}, key=lambda u: u.pk)[:2]]
    compared = 0
    for data in _filter_sets(seeded):
        filters = run_selectors.model_run_filters(data)
        # the page: both tables' counts, as counted over the filtered runs
        ranked, unranked, _ = run_selectors.model_run_page_standing(filters=filters)
        assert (ranked, unranked) == run_selectors.model_run_standing_counts(runs=filters.qs), data
        for user in users:
            runs = run_selectors.model_run_ranking(filters=filters, user=user, standing=standing.RANKED)
            every = run_rows.shown_run_rows(runs)
            for sort in SORTS:
                whole = run_selectors.model_run_rank_ranges(runs=runs, sort=sort)
                count, ends = run_selectors.ranked_count_and_ends(filters=filters, user=user, sort=sort)
                assert count == len(every), (data, user, sort)
                run_selectors.set_rank_ranges(rows=every, ends=ends)
                assert {r.pk: r.rank_range for r in every} == {r.pk: whole.get(r.pk) for r in every}, (data, sort)
                compared += sum(1 for r in every if r.rank_range is not None)
    assert compared > 1000, "rank ranges to compare"


def test_a_page_reads_one_stored_row_and_no_run(seeded):
    filters = run_selectors.model_run_filters({"mode": "agentic"})
    filters.state()  # (its choices read)
    owner = seeded[0].user
    with CaptureQueriesContext(connection) as queries:
        run_selectors.model_run_page_standing(filters=filters, sort="-fast_2")
        run_selectors.ranked_count_and_ends(filters=filters, user=owner, sort="speedup")
    assert len(queries) == 2
    assert all(ModelRun._meta.db_table not in q["sql"] for q in queries.captured_queries)


def test_the_rows_kept_through_uploads_scoring_publishing_edits_and_deletions_equal_a_rebuild(
    problems, seeded, django_user_model
):
    assert _stored() == _rebuilt() and _stored()
    bob = django_user_model.objects.create_user("bob-ends")
    run = fx.make_run(bob, record=False)  # an upload: one run more, none ranked
    assert _stored() == _rebuilt()
    carol = django_user_model.objects.create_user("carol-ends")
    run = fx.make_run(carol)  # results and the scoring job
    assert run.score.status in standing.RUN_STATUSES
    assert _stored() == _rebuilt()
    before = _stored()
    run_score_refresh(model_run_id=run.pk)  # scored again, as a replayed job would: nothing changes
    assert _stored() == before
    model_run_publish(run_id=run.pk, user=carol, published=True)
    assert _stored() == _rebuilt() != before
    model_run_publish(run_id=run.pk, user=carol, published=False)
    assert _stored() == before
    run.precision = "fp4"  # an edit of a filtered value: the sets it left and joined
    run.save(update_fields=["precision"])
    assert _stored() == _rebuilt()
    run.k = 9
    run.save()
    assert _stored() == _rebuilt()
    run.state = ModelRun.State.FINISHED
    run.save(update_fields=["state"])  # progress: no set changes
    assert _stored() == _rebuilt()
    run.score.delete()  # its score gone: listed apart
    assert _stored() == _rebuilt()
    run_score_refresh(model_run_id=run.pk)
    assert _stored() == _rebuilt()
    run.delete()
    assert _stored() == _rebuilt()
    seeded[1].user.delete()  # a user's deletion takes their runs with it
    assert _stored() == _rebuilt()
    incremental = _stored()
    call_command("rebuild_standings")
    assert _stored() == incremental
    ModelRun.objects.all().delete()
    assert _stored() == [] == _rebuilt()


def test_ends_are_kept_exactly_and_sorted_as_postgresql_sorts_them():
    # (what set_rank_ranges bisects: every figure's ends in the order PostgreSQL's sort gave them before)
    values = [0.1, 1 / 3, -0.0, 2.5e-300, float("inf"), float("nan"), 1e16 + 1, -float("inf")]
    read = standing.read_floats(rank_ends._write(values))
    assert [repr(v) for v in read] == [
        "-inf",
        "-0.0",
        "2.5e-300",
        "0.1",
        "0.3333333333333333",
        "1e+16",
        "inf",
        "nan",
    ]
    assert list(standing.read_floats(b"")) == [] == list(standing.read_floats(None))


@pytest.mark.django_db(transaction=True)
def test_the_migration_that_adds_them_fills_what_a_rebuild_writes():
    rebuilt, refilled = rebuilt_and_refilled("0017_measured_baseline", _stored)  # 0017: before the table
    assert rebuilt == _rebuilt() and any(row[2] for row in rebuilt), "ranked runs to compare"
    assert refilled == rebuilt


@pytest.mark.django_db(transaction=True)
def test_two_runs_scored_at_once_each_count_in_the_rows_the_other_writes():
    """Two transactions change two runs' scores at once: the second to refresh the rows waits for the first to
    commit, then counts its change (without the writers' lock it would overwrite the rows with what it read before
    the first committed)."""
    import threading
    import time

    from leaderboard.models import RunScore

    if connection.vendor != "postgresql":
        pytest.skip("SQLite serializes writers itself")
    seed_demo(runs=8, problems=6, attempts=2, users=2, seed=9, log=lambda _: None)
    a, b = RunScore.objects.filter(status=standing.RANKED).order_by("pk").values_list("pk", flat=True)[:2]
    refreshed, go, done = threading.Event(), threading.Event(), threading.Event()
    failures = []

    def change(pk, low, high):
        score = RunScore.objects.get(pk=pk)
        score.pass_at_k_low, score.pass_at_k_high = low, high
        score.save()  # the rows of its sets recomputed, in this transaction

    def first():
        try:
            with transaction.atomic():
                change(a, 0.9991, 0.9992)
                refreshed.set()
                go.wait(10)
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)
        finally:
            connection.close()

    def second():
        try:
            refreshed.wait(10)
            with transaction.atomic():
                change(b, 0.0011, 0.0012)
            done.set()
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert refreshed.wait(10)
    time.sleep(0.5)
    waited = not done.is_set()  # the second writer waits for the first to commit
    go.set()
    for thread in threads:
        thread.join(20)
    assert not failures and waited
    assert _stored() == _rebuilt()
    lows = standing.read_floats(RankingEnds.objects.get(filters=standing.filters_key(("",) * 6)).pass_at_k_lows)
    assert 0.9991 in lows and 0.0011 in lows


def test_scoring_a_run_that_stays_unranked_writes_no_row(problems, django_user_model):
    """While a run is evaluated its score is saved once per batch of results and stays unranked: what it adds to the
    rows (the run itself) does not change, so the job neither reads every run nor writes a row."""
    from leaderboard.models import Submission
    from leaderboard.rankings.services import run_score_refresh_stale
    from leaderboard.submissions.results import result_record

    run = fx.make_run(django_user_model.objects.create_user("dora-ends"), record=False)
    before = _stored()
    submission = Submission.objects.filter(model_run=run).select_related("problem").order_by("pk").first()
    verdict, speedup, fraction = fx.OUTCOMES[submission.problem_id, submission.attempt]
    document = fx.document(verdict, speedup, fraction, submission.problem_id, submission.problem.version)
    with CaptureQueriesContext(connection) as queries:
        assert result_record(submission_id=submission.pk, document=document)
        run_score_refresh_stale(model_run_id=run.pk)
    run.refresh_from_db()
    assert run.score.status != standing.RANKED and run.attempts_done == 1
    assert not [q for q in queries.captured_queries if RankingEnds._meta.db_table in q["sql"]]
    assert _stored() == before == _rebuilt()
