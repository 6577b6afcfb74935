"""Reads of test runs: only ever the owner's (staff see theirs too, nobody sees another person's test)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from leaderboard.models import TestRun


def test_run_detail(*, test_id: int, user) -> TestRun:
    """The owner's test; anyone else gets 404, so a test's existence is not disclosed either."""
    test = TestRun.objects.select_related("problem").filter(pk=test_id, user_id=getattr(user, "pk", None)).first()
    if test is None:
        raise Http404("no such test")
    return test


def test_run_list(*, user) -> QuerySet[TestRun]:
    return (
        TestRun.objects.filter(user_id=getattr(user, "pk", None))
        .select_related("problem")
        .order_by("-created_at", "-id")
    )
