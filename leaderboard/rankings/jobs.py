"""RQ jobs on the "web" queue that the portal gives itself, named in ``evaluator.contract.jobs``
(``COMPARISON_REFRESH``, ``RUN_SCORE_REFRESH``): they take ids and call a service, nothing more. Each recomputes
derived figures from the database, so running one twice, or one that anybody with access to Redis enqueued, changes
nothing but the time it takes."""

from __future__ import annotations

from leaderboard.rankings import services
from leaderboard.submissions.jobs import job_database


def comparison_refresh(a_id: int, b_id: int) -> None:
    with job_database():
        services.run_comparison_refresh(a_id=a_id, b_id=b_id)


def run_score_refresh(run_id: int) -> None:
    with job_database():
        services.run_score_refresh_stale(model_run_id=run_id)
