"""The worker class's own resilience: a Redis that goes away during a step of RQ's work loop is waited for, never
the end of the worker (tests/leaderboard/submissions/test_scheduler_restart.py restarts a real Redis under one)."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from evaluator.worker import ArenaWorker


@pytest.fixture
def worker(redis_conn) -> ArenaWorker:
    return ArenaWorker([Queue("web", connection=redis_conn, serializer=JSONSerializer)], connection=redis_conn)


def test_a_redis_lost_while_cleaning_registries_does_not_end_the_worker(worker, monkeypatch):
    def lost(self) -> None:
        raise RedisConnectionError("Connection closed by server.")

    monkeypatch.setattr(Worker, "run_maintenance_tasks", lost)
    worker.run_maintenance_tasks()  # logged and skipped: the next turn of the loop runs it again


def test_other_errors_of_the_maintenance_pass_still_surface(worker, monkeypatch):
    def broken(self) -> None:
        raise ValueError("a bug, not a restart")

    monkeypatch.setattr(Worker, "run_maintenance_tasks", broken)
    with pytest.raises(ValueError):
        worker.run_maintenance_tasks()
