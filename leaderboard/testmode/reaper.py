"""The reaper of tests: the lifecycle's one reaper (``leaderboard.lifecycle.reaper``) with a test's hooks. A test is
never retried (its author runs it again) and is watched by its deadline alone: one whose reply never came within twice
its job's limit and a minute ends as ``infra_error``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

from django.db.models import QuerySet

from evaluator.contract.jobs import TEST_RECORD_RESULT
from evaluator.contract.result import Verdict, empty_document
from leaderboard.lifecycle.reaper import Pass, Reaper, ReapReport
from leaderboard.models import TestRun
from leaderboard.testmode import services


class TestRunReaper(Reaper[TestRun]):
    __test__ = False
    work = services.TEST
    reply, reply_body = TEST_RECORD_RESULT, "document"

    def rows(self, now: datetime, grace: timedelta) -> Iterable[TestRun]:
        tests: QuerySet[TestRun] = TestRun.objects.exclude(state=TestRun.State.FINISHED)
        return tests.only("pk", "job_id", "job_timeout_s", "enqueued_at", "created_at")

    def reap_row(self, row: TestRun, run: Pass) -> None:
        """Past its deadline, whatever Redis says: ended as ``infra_error``."""
        since = row.enqueued_at or row.created_at
        if since + timedelta(seconds=2 * row.job_timeout_s + 60) < run.now:
            document = empty_document()
            document["verdict"] = Verdict.INFRA_ERROR.value
            document["message"] = "no worker answered for this test in time; run it again"
            if services.test_run_record(test_id=row.pk, document=document, job_id=row.job_id):
                run.report.failed.append(row.pk)

    def describe(self, report: ReapReport) -> str:
        return f"tests no worker answered, ended as infra_error: {len(report.failed)}"


TESTS = TestRunReaper()


def test_runs_reap(*, now: datetime | None = None) -> int:
    """Ends the tests no worker answered in time (:class:`TestRunReaper`); how many."""
    return len(TESTS.reap(now=now).failed)
