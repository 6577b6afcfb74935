"""The worker class's own resilience: a Redis that goes away during a step of RQ's work loop is waited for, never
the end of the worker (tests/leaderboard/submissions/test_scheduler_restart.py restarts a real Redis under one)."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from rq import Queue, Worker
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus

from evaluator.host.worker import ArenaWorker


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


@pytest.mark.parametrize("step, args", [("maintain_heartbeats", (None,)), ("set_current_job_working_time", (12.0,))])
def test_a_redis_lost_while_a_job_runs_leaves_the_worker_monitoring_it(worker, monkeypatch, step, args):
    # the forking worker's monitor writes both every interval while the work horse evaluates; RQ lets either end the
    # worker, which then leaves its running evaluation behind
    def lost(self, *a, **k) -> None:
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(Worker, step, lost)
    getattr(worker, step)(*args)  # logged: the next interval writes again


@pytest.mark.parametrize("step, args", [("maintain_heartbeats", (None,)), ("set_current_job_working_time", (12.0,))])
def test_other_errors_while_a_job_runs_still_surface(worker, monkeypatch, step, args):
    def broken(self, *a, **k) -> None:
        raise ValueError("a bug, not a restart")

    monkeypatch.setattr(Worker, step, broken)
    with pytest.raises(ValueError):
        getattr(worker, step)(*args)


def _lose_redis_once_at_the_idle_state_write(monkeypatch, error: Exception) -> list[str]:
    """RQ writes the worker's state before each dequeue, outside the retry it keeps around the dequeue itself: a Redis
    restart that lands there (as one landed in CI, the moment a new web worker started) raises from it."""
    real = Worker.set_state
    lost: list[str] = []

    def set_state(self, state, pipeline=None):
        if state == WorkerStatus.IDLE and not lost:
            lost.append(state)
            raise error
        return real(self, state, pipeline)

    monkeypatch.setattr(Worker, "set_state", set_state)
    return lost


def test_a_redis_lost_before_the_dequeue_does_not_end_the_worker(worker, redis_conn, monkeypatch):
    lost = _lose_redis_once_at_the_idle_state_write(
        monkeypatch, RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    )
    queue = Queue("web", connection=redis_conn, serializer=JSONSerializer)
    job = queue.enqueue("os.getcwd")  # not an arena job: refused, which still counts as the worker's one job

    assert worker.work(burst=False, max_jobs=1)  # before the fix: "found an unhandled exception, quitting", False
    assert lost
    assert job.id in FailedJobRegistry("web", connection=redis_conn, serializer=JSONSerializer).get_job_ids()


def test_other_errors_before_the_dequeue_still_end_the_worker(worker, redis_conn, monkeypatch):
    _lose_redis_once_at_the_idle_state_write(monkeypatch, ValueError("a bug, not a restart"))
    Queue("web", connection=redis_conn, serializer=JSONSerializer).enqueue("os.getcwd")

    assert not worker.work(burst=False, max_jobs=1)


def test_the_warm_worker_heartbeats_while_it_evaluates_and_leaves_the_next_sandboxes_waiting(redis_conn, monkeypatch):
    import os
    import time

    from evaluator.contract.jobs import EVALUATE
    from evaluator.contract.spec import EvalSpec
    from evaluator.host import pool, sandbox
    from evaluator.host.worker import ArenaWarmWorker

    if os.geteuid() != 0 or sandbox.probe("cpu") is not None:
        pytest.skip("needs root and bubblewrap")
    monkeypatch.setenv(pool.ENV, "0")  # restored after the test: the worker turns it on for its process
    beats: list[float] = []

    class Watched(ArenaWarmWorker):
        def maintain_heartbeats(self, job):  # the real heartbeat, noted
            super().maintain_heartbeats(job)
            beats.append(time.monotonic())

    source = (
        "import torch.distributed as dist\n\ndef solution(x):\n    out = x.clone()\n    dist.all_reduce(out)\n"
        "    return out\n"
    )
    spec = EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=source,
        profile="cpu-gloo-2",
        trials=2,
        timing_iterations=400,
    )  # several seconds: several beats of a one-second interval
    queue = Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer)
    job = queue.enqueue(EVALUATE, spec.to_dict(), 1, "nonce", job_timeout=600)
    worker = Watched([queue], connection=redis_conn, job_monitoring_interval=1)
    try:
        worker.work(burst=True)
        job.refresh()
        assert job.get_status() == "finished", job.exc_info
        assert job.return_value()["document"]["verdict"] == "passed"
        # A beat every interval while the evaluation ran (a plain SimpleWorker sends none), counted over the job's
        # own run as RQ recorded it: the worker's start-up and its burst's end are not the job's.
        ran = (job.ended_at - job.started_at).total_seconds()
        assert len(beats) >= max(1, int(ran) - 1), (ran, len(beats))
        assert all(b - a < 3.0 for a, b in zip(beats, beats[1:])), beats  # never starved for whole intervals
        assert pool.enabled() and "cpu-gloo-2" in pool._held
    finally:
        pool.drain()


def test_the_scheduler_check_in_a_forked_job_leaves_the_scheduler_to_the_worker(redis_conn):
    # The work horse of a job is a fork of the worker and heartbeats before the job runs: there the scheduler's
    # process is not a child, and multiprocessing's is_alive() raised AssertionError ("can only test a child
    # process"), so the web worker's reply job failed and was retried.
    import os

    worker = ArenaWorker([Queue("web", connection=redis_conn, serializer=JSONSerializer)], connection=redis_conn)
    worker._start_scheduler()
    process = worker.scheduler._process
    assert process is not None and process.is_alive()
    try:
        pid = os.fork()
        if pid == 0:  # the work horse
            code = 1
            try:
                code = 0 if worker.scheduler_keep_alive(force=True) is False else 2
            except BaseException:  # noqa: BLE001 - its failure is the test's
                code = 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert worker.scheduler._process is process and process.is_alive()  # the worker's own scheduler, untouched
        assert worker.scheduler_keep_alive(force=True) is False  # and the worker itself still checks it
    finally:
        process.terminate()
        process.join(10)
