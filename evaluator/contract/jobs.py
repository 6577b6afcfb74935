"""Every queue and every job that crosses between the portal and the workers, named once.

Both sides enqueue by these names and each worker runs only the jobs listed for its role, so a job name that is
not here is never executed. Payloads are plain JSON (ids, strings, the spec's and the result document's dicts);
nothing pickled crosses a queue."""

from __future__ import annotations

from dataclasses import dataclass

WEB_QUEUE = "web"  # replies that the portal's web worker stores in the database
CHECKS_QUEUE = "checks"  # problem proposals' checks: contributors' unreviewed code, on a worker with no database


def evaluation_queue(profile: str) -> str:
    """The queue a host of ``profile`` serves, one evaluation at a time."""
    return profile


_BUILD_SUFFIX = "-build"


def build_queue(profile: str) -> str:
    """CUDA builds ahead of the GPU work, on the same host's CPU cores."""
    return f"{profile}{_BUILD_SUFFIX}"


def is_build_queue(queue: str) -> bool:
    """Whether ``queue`` is a profile's build queue (:func:`build_queue`)."""
    return queue.endswith(_BUILD_SUFFIX)


def test_queue(profile: str) -> str:
    """The fast lane of a profile: unranked test-mode evaluations, served before the ranked queue."""
    return f"{profile}-test"


# Worker-side jobs (hosts with no database credentials).
EVALUATE = "evaluator.host.jobs.evaluate_job"
PREBUILD = "evaluator.host.jobs.prebuild_job"
CHECK_PROPOSAL = "evaluator.host.jobs.check_proposal_job"
EVALUATE_TEST = "evaluator.host.jobs.evaluate_test_job"  # test mode: on test_queue(profile), unranked
# Web-side replies (the portal's web worker, which holds the database).
MARK_RUNNING = "leaderboard.submissions.jobs.mark_running"
RECORD_RESULT = "leaderboard.submissions.jobs.record_result"
MARK_CHECKING = "portal.contributions.jobs.proposal_mark_checking"
RECORD_CHECK = "portal.contributions.jobs.proposal_record_check"
TEST_MARK_RUNNING = "leaderboard.testmode.jobs.test_mark_running"
TEST_RECORD_RESULT = "leaderboard.testmode.jobs.test_record_result"
# Web-side work the portal gives itself: derived figures too costly for a request (ids only; idempotent).
COMPARISON_REFRESH = "leaderboard.rankings.jobs.comparison_refresh"
RUN_SCORE_REFRESH = "leaderboard.rankings.jobs.run_score_refresh"

WORKER_JOBS = frozenset({EVALUATE, PREBUILD, CHECK_PROPOSAL, EVALUATE_TEST})
WEB_JOBS = frozenset(
    {
        MARK_RUNNING,
        RECORD_RESULT,
        MARK_CHECKING,
        RECORD_CHECK,
        TEST_MARK_RUNNING,
        TEST_RECORD_RESULT,
        COMPARISON_REFRESH,
        RUN_SCORE_REFRESH,
    }
)


@dataclass(frozen=True)
class JobName:
    """One job: its dotted function path and the queue role that may run it."""

    function: str
    role: str  # "worker" or "web"


def role_of(function: str) -> str | None:
    if function in WORKER_JOBS:
        return "worker"
    if function in WEB_JOBS:
        return "web"
    return None
