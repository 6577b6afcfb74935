"""The writes of rankings, each a stored figure recomputed by the selector that defines it, so pages read rows:

- a model run's ranking row (``RunScore``, ``run_selectors.model_run_score``) with the run's progress, once per batch of
  attempts that settle: recording one marks the run stale in its transaction (``run_score_mark_stale``, a few
  queries whatever the run's size) and the first mark asks the web worker to score the run
  (``run_score_refresh_stale``), which counts every attempt settled by then;
- a problem's standing on one profile, version and revision (``ProblemStanding``, ``selectors.problem_ranking``)
  with every row of that ranking (``StandingEntry``, read by ``ranking_rows``) when a passed result of it is
  recorded, and its category's line (``CategoryStanding``, ``overview.summarise``);
- a problem page's measured roofline and the values the runs' filters offer (``stored_figures``);
- the overall ranking's counts and sorted interval ends per set of filters (``RankingEnds``, ``rank_ends``), whenever
  a run or its score is saved or deleted;
- ``standings_rebuild``: every standing recomputed from the results (``manage.py rebuild_standings``);
- two runs' comparison (``RunComparison``, ``comparison.model_run_comparison_compute``) by a job on the web queue that
  a comparison page asks for (``run_comparison_request``) when none is stored for the runs' current scores.

Each is recomputed from the rows as they stand, in the writer's transaction, so recording a result twice changes
nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import django_rq
from django.db import transaction
from django.utils import timezone
from redis.exceptions import RedisError

from evaluator.contract import jobs
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict
from leaderboard.catalogue import selectors as catalogue
from leaderboard.models import (
    CategoryStanding,
    ModelRun,
    Problem,
    ProblemStanding,
    Result,
    RunComparison,
    RunScore,
    StandingEntry,
    Submission,
)
from leaderboard.rankings import (
    comparison,
    generations,
    metrics,
    overview,
    rank_ends,
    ranking_rows,
    run_selectors,
    scores,
    selectors,
    solutions,
    stored_figures,
)

logger = logging.getLogger(__name__)

# How long a comparison asked for is not asked again (one job for every reader of a page being computed; a job that
# Redis lost is asked for again after this).
COMPARISON_ASKED_TTL_S = 60


# RunScore's interval columns per key of ``metrics.Aggregate.intervals``.
INTERVAL_FIELDS = {
    "pass_at_k": ("pass_at_k_low", "pass_at_k_high"),
    "fast_1": ("fast_1_low", "fast_1_high"),
    "fast_1_5": ("fast_1_5_low", "fast_1_5_high"),
    "fast_2": ("fast_2_low", "fast_2_high"),
    "geomean": ("geomean_low", "geomean_high"),
}


def run_score_mark_stale(*, model_run_id: int) -> None:
    """Called where an attempt of the run settles (a result recorded, an attempt cancelled), inside that
    transaction: the run's score and progress are to be recomputed. The run's row stays locked until the caller
    commits, so the job (which locks it too) sees this attempt; only the first mark of a batch enqueues the job,
    after the commit. Results of one run land every few seconds: scoring the run once per result cost a bootstrap
    over its problems each time."""
    run = ModelRun.objects.select_for_update().filter(pk=model_run_id).values_list("score_stale_since", flat=True)
    stale = run.first()
    if stale is not None:  # a job is asked for already and has not started: it will count this attempt
        return
    ModelRun.objects.filter(pk=model_run_id).update(score_stale_since=timezone.now())
    transaction.on_commit(lambda: run_score_request(model_run_id=model_run_id))


def run_score_request(*, model_run_id: int) -> bool:
    """Asks the web worker to score the run (``RUN_SCORE_REFRESH``). False when Redis could not be reached: the run
    stays stale and the reaper asks again (``run_scores_request_stale``)."""
    try:
        django_rq.get_queue(jobs.WEB_QUEUE).enqueue(
            jobs.RUN_SCORE_REFRESH, model_run_id, description=f"score run #{model_run_id}"
        )
    except RedisError:
        logger.warning("could not ask for run #%s to be scored; the reaper asks again", model_run_id, exc_info=True)
        return False
    return True


def run_score_refresh_stale(*, model_run_id: int) -> RunScore | None:
    """The web worker's job: scores the run if an attempt settled since it was last scored (``run_score_refresh``)
    and marks it current, in one transaction under the run's lock. A run already current is left alone, so a job
    run twice (a replay, the reaper's second ask) changes nothing."""
    with transaction.atomic():
        stale = (
            ModelRun.objects.select_for_update()
            .filter(pk=model_run_id)
            .values_list("score_stale_since", flat=True)
            .first()
        )
        return None if stale is None else run_score_refresh(model_run_id=model_run_id)


def run_scores_request_stale(*, older_than_s: float) -> int:
    """Asks again for every run stale for longer than ``older_than_s`` (its job lost with Redis, or never enqueued
    because Redis was down at the commit). Returns how many were asked for."""
    since = timezone.now() - timedelta(seconds=older_than_s)
    runs = list(ModelRun.objects.filter(score_stale_since__lt=since).values_list("pk", flat=True))
    return sum(run_score_request(model_run_id=pk) for pk in runs)


def run_score_refresh(*, model_run_id: int) -> RunScore | None:
    """Recomputes a run's progress (attempts done, state) and its RunScore from its attempts as they stand: the
    ranking's figures, and the whole score with its intervals and curves that the run's page and the comparison
    read (``detail``), so no request scores a run.

    Called by the web worker's job (``run_score_refresh_stale``), when a run is uploaded, and by the rebuild; the
    run's row is locked so two refreshes of one run are counted one after another. Recomputing from scratch keeps
    it idempotent.
    """
    with transaction.atomic():
        run = ModelRun.objects.select_for_update().filter(pk=model_run_id).first()
        if run is None:
            return None
        attempts = run_selectors.model_run_attempts(run=run)
        score = run_selectors.model_run_score(run=run, attempts=attempts)
        curves = overview.model_run_curves(run=run, attempts=attempts)  # pass@1 is its first point
        overall = score.overall
        intervals = overall.intervals
        revisions = sorted({a.protocol_revision for a in attempts if a.protocol_revision is not None})
        values = {
            "k": score.k,
            "pass_at_1": curves.pass_at[0],
            "pass_at_k": overall.mean_pass_at_k,
            **{metrics.fast_p_field(p): overall.mean_fast_p_at_k.get(p) for p in metrics.FAST_P_THRESHOLDS},
            "geomean_speedup": overall.geomean_speedup,
            "mean_roofline_fraction": overall.mean_roofline_fraction,
            "problems_scored": overall.problems,
            "problems_not_scorable": len(overall.not_scorable),
            "problems_not_attempted": len(overall.not_attempted),
            "coverage": overall.coverage,
            "correct_attempts": overall.correct_attempts,
            "by_category": {cat: scores.aggregate_record(agg) for cat, agg in score.by_category.items()},
            "status": run_selectors.model_run_status(run=run, attempts=attempts, score=score),
            "timed": score.timed,
            "protocol_revision": revisions[-1] if revisions else None,
            "detail": {"score": scores.score_record(score), "curves": vars(curves)},
        }
        for name, (low, high) in INTERVAL_FIELDS.items():
            interval = intervals.get(name)
            values[low], values[high] = (interval.low, interval.high) if interval else (None, None)
        row, _ = RunScore.objects.update_or_create(model_run=run, defaults=values)
        generations.rankings_changed(
            generations.RUNS, generations.run_scope(run.pk), generations.user_scope_of(run.user_id)
        )

        done = sum(1 for a in attempts if a.is_done)
        started = any(a.state != Submission.State.QUEUED for a in attempts)
        state = (
            ModelRun.State.FINISHED
            if attempts and done == len(attempts)
            else ModelRun.State.RUNNING
            if started
            else ModelRun.State.QUEUED
        )
        # Scored under the run's lock with every attempt settled by now: current (a mark waiting on the lock
        # marks it stale again after this commits).
        if (run.attempts_done, run.attempts_total, run.state, run.score_stale_since) != (
            done,
            len(attempts),
            state,
            None,
        ):
            run.attempts_done, run.attempts_total = done, len(attempts)
            if state == ModelRun.State.FINISHED and run.state != state:
                run.finished_at = timezone.now()
            run.state, run.score_stale_since = state, None
            run.save(update_fields=["attempts_done", "attempts_total", "state", "finished_at", "score_stale_since"])
    return row


def standing_after_result(*, result: Result) -> None:
    """Called by ``result_record`` once a result is stored (inside its transaction): a passed evaluation that is not
    a re-measurement changes its problem's ranking on its profile, version and revision; nothing else does (a
    re-measurement only verifies a row, which the home page does not show)."""
    submission = result.submission
    if result.verdict != Verdict.PASSED.value or submission.remeasure_of_id is not None:
        return
    problem_standing_refresh(
        problem_id=submission.problem_id,
        profile=submission.profile,
        version=result.problem_version,
        revision=result.protocol_revision,
    )


def problem_standing_refresh(
    *, problem_id: str, profile: str, version: int | None, revision: int | None, category: bool = True
) -> ProblemStanding | None:
    """Recomputes one ``ProblemStanding`` row from the problem's passed evaluations on ``profile`` of ``version``
    and ``revision`` (``selectors.problem_ranking``): the one standing a result changes, not the problem's others
    or any other problem's; then its category's line (``category``) if the problem's line on the home page moved.
    The problem's row is locked, so results of one problem landing at once on several web workers are counted one
    after another; recomputed from the rows as they stand, so a replay changes nothing."""
    # (inside the caller's transaction, without a savepoint of its own: a failure rolls the caller's back whole)
    with transaction.atomic(savepoint=False):
        # (the row is locked; of it only its id and category are read: its statement and reference are big text)
        problem = (
            Problem.objects.select_for_update()
            .filter(pk=problem_id)
            .only("id", "category", "version", "world_sizes")
            .first()
        )
        if problem is None:
            return None
        line = _home_line(problem) if category else None
        evaluations: list[dict[str, Any]] | None = None
        protocols: dict[int, str] = {}
        if version and profile in PROFILES:  # a result that recorded no version counts only towards the profile
            evaluations, protocols = selectors.problem_evaluations(
                problem=problem, profile=profile, version=version, revision=revision
            )
        passed = (
            len(evaluations)  # every passed evaluation of this version and revision, re-measurements left out
            if evaluations is not None
            else selectors.passed_results(problem, profile)
            .filter(problem_version=version, protocol_revision=revision)
            .count()
        )
        key = {
            "problem": problem,
            "profile": profile,
            "problem_version": version or 0,
            "protocol_revision": revision or 0,
        }
        row = None
        if not passed:
            ProblemStanding.objects.filter(**key).delete()
        else:
            ranking: list[solutions.RankingEntry] = []
            hosts: dict[int, str] = {}
            if evaluations is not None:
                # Re-measurements only verify rows (read with the page), so the order is ranked without them.
                ranking = solutions.rank_solutions(
                    evaluations, timed=metrics.measures_speed(profile), protocols=protocols
                )
                hosts = {e["submission_id"]: e["worker"] for e in evaluations if e["worker"]}
            lead = ranking[0] if ranking else None
            values = {
                "passed": passed,
                "solutions": len(ranking),
                "leader_submission_id": lead.submission_id if lead else None,
                "leader_user_id": lead.user_id if lead else None,
                "leader_username": lead.username if lead else "",
                "leader_model_run_id": lead.model_run_id if lead else None,
                "leader_model": lead.model if lead else "",
                "best_speedup": lead.speedup if lead else None,
                "history": overview.history_record(overview.best_over_time(ranking)),
                "speedups": sorted(e["speedup"] for e in evaluations or () if e["speedup"] is not None),
                "updated_at": timezone.now(),
            }
            # Written in place (the problem's row is locked: no other refresh of its standings runs meanwhile).
            pk = ProblemStanding.objects.filter(**key).values_list("pk", flat=True).first()
            if pk is None:
                row = ProblemStanding.objects.create(**key, **values)
            else:
                ProblemStanding.objects.filter(pk=pk).update(**values)
                row = ProblemStanding(pk=pk, **key, **values)
            # The whole ranking is rewritten: pooling and rank ranges move every row when one evaluation lands.
            row.entries.all().delete()
            StandingEntry.objects.bulk_create(
                [
                    StandingEntry(
                        standing=row,
                        **ranking_rows.entry_values(e, (hosts[sid] for sid in e.submission_ids if sid in hosts)),
                    )
                    for e in ranking
                ]
            )
        # The category's line sums its problems' lines: it moves only when this problem's does (a result on a
        # profile that does not speak for the problem, or pooled into a row that is not its leader, leaves it).
        if category and _home_line(problem) != line:
            category_standing_refresh(category=problem.category)
    return row


def _home_line(problem: Problem) -> overview.ProblemLeader:
    """The problem's line on the home page as its stored standings give it (one query, a handful of rows)."""
    _, lines = overview.stored_leaders([problem], {problem.id: catalogue.problem_default_profile(problem=problem)})
    return lines[problem.id]


def category_standing_refresh(*, category: str) -> CategoryStanding | None:
    """Recomputes a category's line on the home page over its active problems (``overview.summarise`` of each
    one's stored line, ``overview.stored_leaders``); deletes it when the category has none. The category's row is
    locked first, so two problems of it refreshed at once are summed one after the other."""
    with transaction.atomic(savepoint=False):  # (as ``problem_standing_refresh``)
        CategoryStanding.objects.bulk_create([CategoryStanding(category=category)], ignore_conflicts=True)
        CategoryStanding.objects.select_for_update().filter(pk=category).first()
        problems: list = catalogue.listed_problems(catalogue.problem_list(category=category))  # rows, as listed
        if not problems:
            CategoryStanding.objects.filter(pk=category).delete()
            return None
        _, leaders = overview.stored_leaders(
            problems, {p.id: catalogue.problem_default_profile(problem=p) for p in problems}
        )
        summary = overview.stored_summaries(problems, leaders)[category]
        row = CategoryStanding(
            category=category,
            leader=summary.leader[:300],
            leader_firsts=summary.leader_firsts,
            best_speedup=summary.best_speedup,
            best_problem_id=summary.best_problem_id,
            solutions=summary.solutions,
            problems=summary.problems,
        )
        row.save()
    return row


def category_standings_refresh() -> None:
    """Every category's line, and none for a category without active problems (after the catalogue changed)."""
    with transaction.atomic():
        categories = set(CategoryStanding.objects.values_list("category", flat=True)) | set(
            Problem.objects.filter(is_active=True).values_list("category", flat=True)
        )
        for category in sorted(categories):
            category_standing_refresh(category=category)


def run_scores_rebuild() -> int:
    """Recomputes every run's RunScore (after a change of the scoring code or of the catalogue). Returns how many."""
    runs = list(ModelRun.objects.order_by("pk").values_list("pk", flat=True))
    for run_id in runs:
        run_score_refresh(model_run_id=run_id)
    return len(runs)


def run_protocol_labels_rebuild() -> int:
    """Writes every model run's stored protocol label (``ModelRun.protocol_label``) from its protocol's columns, as
    creating the run wrote it. Returns how many changed."""
    runs = ModelRun.objects.only("pk", "mode", "k", "turn_budget", "tokens", "wall_time_s", "protocol_label")
    changed = []
    for run in runs.order_by("pk").iterator(chunk_size=2000):
        label = scores.stored_protocol_label(run)
        if run.protocol_label != label:
            run.protocol_label = label
            changed.append(run)
    ModelRun.objects.bulk_update(changed, ["protocol_label"], batch_size=1000)
    return len(changed)


def standings_rebuild() -> int:
    """Recomputes every stored standing from the results: the same rows that recording each result one by one
    leaves (a test holds them equal), with the measured rooflines and baselines, the runs' filter choices, the
    ranking's counts and interval ends per set of filters (from the runs' stored scores) and their protocol labels.
    Returns the number of problem standings."""
    with transaction.atomic():
        keys = set(
            Result.objects.filter(verdict=Verdict.PASSED.value, submission__remeasure_of__isnull=True)
            .values_list("submission__problem_id", "submission__profile", "problem_version", "protocol_revision")
            .distinct()
        )
        ProblemStanding.objects.all().delete()
        for problem_id, profile, version, revision in sorted(keys, key=str):
            problem_standing_refresh(
                problem_id=problem_id, profile=profile, version=version, revision=revision, category=False
            )
        CategoryStanding.objects.all().delete()
        category_standings_refresh()
        stored_figures.measured_rooflines_rebuild()
        stored_figures.measured_baselines_rebuild()
        stored_figures.run_filter_choices_rebuild()
        rank_ends.rank_ends_rebuild()
        run_protocol_labels_rebuild()
        generations.rankings_changed()
        return ProblemStanding.objects.count()


def run_comparison_refresh(*, a_id: int, b_id: int) -> RunComparison | None:
    """Computes runs ``a_id`` and ``b_id`` compared (both scored at the smaller k, the paired bootstrap of each
    figure) and stores it with the RunScore stamps it was computed from. A comparison already current for those
    stamps is left as it is, so the job asked for by many readers at once runs the bootstrap once."""
    runs = {r.pk: r for r in ModelRun.objects.select_related("score").filter(pk__in=(a_id, b_id))}
    if a_id not in runs or b_id not in runs:
        return None
    a, b = runs[a_id], runs[b_id]
    stamps = {"a_scored_at": comparison.model_run_scored_at(a), "b_scored_at": comparison.model_run_scored_at(b)}
    current = RunComparison.objects.filter(a=a, b=b, **stamps).exclude(record={}).first()
    if current is not None:
        return current
    done = comparison.model_run_comparison_compute(a=a, b=b)
    record = scores.comparison_record(
        k=done.k,
        a=done.a_score,
        b=done.b_score,
        differences=done.differences,
        titles={r.problem_id: (r.title, r.category) for r in done.rows},
    )
    row, _ = RunComparison.objects.update_or_create(a=a, b=b, defaults={**stamps, "record": record})
    return row


def run_comparison_request(*, a: ModelRun, b: ModelRun) -> bool:
    """Asks the web worker for runs ``a`` and ``b`` compared (``run_comparison_refresh``), once per pair and scores
    per ``COMPARISON_ASKED_TTL_S``. Returns whether it is asked for (False: Redis could not be reached; the next
    reader asks again)."""
    stamps = [comparison.model_run_scored_at(r) for r in (a, b)]
    key = f"arena:comparison-asked:{a.pk}:{b.pk}:" + ":".join(s.isoformat() if s else "-" for s in stamps)
    try:
        connection = django_rq.get_connection(jobs.WEB_QUEUE)
        if connection.set(key, 1, nx=True, ex=COMPARISON_ASKED_TTL_S):
            django_rq.get_queue(jobs.WEB_QUEUE).enqueue(
                jobs.COMPARISON_REFRESH, a.pk, b.pk, description=f"compare runs #{a.pk} and #{b.pk}"
            )
    except RedisError:
        logger.warning("could not ask for runs #%s and #%s compared", a.pk, b.pk, exc_info=True)
        return False
    return True
