"""The progress of queued work (a submission, a model run, a test), named once for the portal's models and for the CLI
that follows them through the API. Progress is kept apart from the outcome: a finished submission has a verdict, a
cancelled one may have none."""

from __future__ import annotations

QUEUED = "queued"  # stored and on (or waiting for) its queue
RUNNING = "running"  # a worker said it started
FINISHED = "finished"  # its result is recorded
CANCELLED = "cancelled"  # its owner withdrew it before a result (submissions only)

PENDING_STATES = frozenset({QUEUED, RUNNING})  # still to be evaluated: what the per-user limits count
FINAL_STATES = frozenset({FINISHED, CANCELLED})  # never change again: what pollers wait for


def is_done(state: str) -> bool:
    """Whether work in ``state`` is over (nothing more will be recorded for it)."""
    return state in FINAL_STATES
