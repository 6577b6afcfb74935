"""Every read the pages, the API and exports make. ``problem_ranking`` is the one place a ranking is computed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber
from django.shortcuts import get_object_or_404

from evaluator.profiles import PROFILES
from evaluator.result import Verdict
from leaderboard.models import Problem, Result, Submission
from problems.registry import CATEGORIES


def problem_list(*, category: str | None = None) -> QuerySet[Problem]:
    problems = Problem.objects.filter(is_active=True)
    if category:
        problems = problems.filter(category=category)
    return problems.order_by("category", "title")


@dataclass(frozen=True)
class Category:
    key: str
    label: str
    problems: list[Problem]


def problem_list_by_category() -> list[Category]:
    """Active problems grouped by category, categories in the suite's order."""
    grouped: dict[str, list[Problem]] = {}
    for problem in problem_list():
        grouped.setdefault(problem.category, []).append(problem)
    order = list(CATEGORIES) + sorted(set(grouped) - set(CATEGORIES))
    return [Category(key, CATEGORIES.get(key, key), grouped[key]) for key in order if key in grouped]


def problem_detail(*, problem_id: str) -> Problem:
    """The problem, or Http404 (which pages and the API both turn into a 404)."""
    return get_object_or_404(Problem, pk=problem_id)


def problem_default_profile(*, problem: Problem, preferred: str | None = None) -> str | None:
    supported = problem.supported_profiles
    if preferred in supported:
        return preferred
    from django.conf import settings

    if settings.ARENA_DEFAULT_PROFILE in supported:
        return settings.ARENA_DEFAULT_PROFILE
    return supported[0] if supported else None


@dataclass(frozen=True)
class RankingEntry:
    rank: int
    username: str
    user_id: int
    submission_id: int
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    baseline_median_us: float | None
    solution_median_us: float | None
    roofline_fraction: float | None
    submitted_at: datetime


def problem_ranking(*, problem: Problem, profile: str) -> list[RankingEntry]:
    """Each user's best passed submission for ``problem`` on ``profile``, fastest first.

    Only results measured on the problem's current version count, so a ranking compares like with like.
    A user's best is the highest speedup (earliest submission on ties); passed results without a timing come last.
    """
    if profile not in PROFILES:
        return []
    best_first = [F("speedup").desc(nulls_last=True), F("submission__created_at").asc(), F("pk").asc()]
    results = (
        Result.objects.filter(
            verdict=Verdict.PASSED.value,
            submission__problem=problem,
            submission__profile=profile,
            problem_version=problem.version,
        )
        .annotate(user_rank=Window(RowNumber(), partition_by=[F("submission__user_id")], order_by=best_first))
        .filter(user_rank=1)
        .select_related("submission__user")
        .order_by(*best_first)
    )
    return [
        RankingEntry(
            rank=position,
            username=r.submission.user.get_username(),
            user_id=r.submission.user_id,
            submission_id=r.submission_id,
            speedup=r.speedup,
            speedup_ci_low=r.speedup_ci_low,
            speedup_ci_high=r.speedup_ci_high,
            baseline_median_us=r.baseline_median_us,
            solution_median_us=r.solution_median_us,
            roofline_fraction=r.roofline_fraction,
            submitted_at=r.submission.created_at,
        )
        for position, r in enumerate(results, start=1)
    ]


def submission_detail(*, submission_id: int) -> Submission:
    return get_object_or_404(Submission.objects.select_related("problem", "user", "result"), pk=submission_id)


@dataclass(frozen=True)
class QueueStatus:
    position: int | None  # 1 = next; None when the job is not waiting in the queue
    length: int
    workers: int  # workers listening on this profile's queue now


def submission_queue_status(*, submission: Submission) -> QueueStatus | None:
    """Where a queued submission stands in its profile's queue, and whether any worker serves that queue.
    None when Redis cannot be reached (the page still renders)."""
    import django_rq
    from redis.exceptions import RedisError
    from rq import Worker

    try:
        queue = django_rq.get_queue(PROFILES[submission.profile].queue)
        ids = queue.get_job_ids()
        position = ids.index(submission.job_id) + 1 if submission.job_id in ids else None
        return QueueStatus(position=position, length=len(ids), workers=Worker.count(queue=queue))
    except RedisError:
        return None


def submission_list(*, user) -> QuerySet[Submission]:
    return Submission.objects.filter(user=user).select_related("problem", "result").order_by("-created_at", "-id")


def submission_source_visible(*, submission: Submission, user) -> bool:
    """Sources are private to their author (and staff) until the site publishes best solutions."""
    return bool(user.is_authenticated and (user.pk == submission.user_id or user.is_staff))
