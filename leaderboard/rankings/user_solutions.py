"""A user's best solo solutions, one per problem and profile, for their page and the API's user."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from evaluator.contract.result import Verdict
from leaderboard.models import Result
from leaderboard.rankings import prepared


@dataclass(frozen=True)
class BestSolution:
    problem_id: str
    problem_title: str
    profile: str
    submission_id: int
    speedup: float | None
    roofline_fraction: float | None
    submitted_at: datetime


def user_best_solutions(*, user) -> list[BestSolution]:
    """The user's best passed solo submission per problem and profile (model-run attempts are on run pages). On
    PostgreSQL its query is built and compiled once per process for each user (``prepared.sql_of``: building and
    compiling the window over joins was about a fifth of a user's page) and its plain columns read as ``values_list``
    reads them."""
    if connection.vendor != "postgresql":
        return [BestSolution(*row) for row in _best_solutions_query(user.pk)]
    try:
        sql, params = prepared.sql_of(("user-best-solutions", user.pk), lambda: _best_solutions_query(user.pk))
    except EmptyResultSet:
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [BestSolution(*row) for row in cursor.fetchall()]


def _best_solutions_query(user_id: int) -> QuerySet:
    best_first = [F("speedup").desc(nulls_last=True), F("submission__created_at").asc(), F("pk").asc()]
    return (
        Result.objects.filter(
            verdict=Verdict.PASSED.value,
            submission__user_id=user_id,
            submission__model_run__isnull=True,
            submission__remeasure_of__isnull=True,
        )
        .annotate(
            slot=Window(
                RowNumber(), partition_by=[F("submission__problem_id"), F("submission__profile")], order_by=best_first
            )
        )
        .filter(slot=1)
        .order_by("submission__problem_id", "submission__profile")
        .values_list(
            "submission__problem_id",
            "submission__problem__title",
            "submission__profile",
            "submission_id",
            "speedup",
            "roofline_fraction",
            "submission__created_at",
        )
    )
