"""Transitional: ``evaluator.contract.jobs`` still names the web side's reply jobs ``leaderboard.jobs.*``; they live
in ``leaderboard.submissions.jobs``. Delete this module once MARK_RUNNING and RECORD_RESULT there name
``leaderboard.submissions.jobs.mark_running`` and ``...record_result`` (workers already running keep enqueueing the
old names until they restart, so keep it until every worker runs the new contract)."""

from leaderboard.submissions.jobs import mark_running, record_result

__all__ = ["mark_running", "record_result"]
