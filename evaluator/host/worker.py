"""The only RQ worker classes the arena runs: every queue speaks JSON (never pickle), and a worker runs only the job
functions allowed on the queue a job came from, with a payload of the contract's shape
(``evaluator/contract/payloads.py``). Anything else — an unknown function (``os.system``), a pickled job, extra
callbacks, a malformed payload — is refused: logged, moved to the failed registry, never executed.

``ArenaWorker`` forks a work horse per job (``rq worker --worker-class evaluator.host.worker.ArenaWorker``, and the web
worker through settings' ``RQ["WORKER_CLASS"]``); ``ArenaSimpleWorker`` runs jobs in its own process (tests);
``ArenaWarmWorker`` does too, and after each job starts the next evaluation's sandboxes ahead (GPU hosts).
A worker serves either the web queue or worker queues, never both: the web worker holds the database, the others
run code under test. A worker of the second kind takes its signing key out of the environment when it starts."""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any, Callable

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import SimpleWorker, Worker
from rq.exceptions import DeserializationError
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from evaluator.contract import payloads, signing
from evaluator.contract.jobs import WEB_QUEUE

logger = logging.getLogger("arena.worker")

SERIALIZER = "rq.serializers.JSONSerializer"
REFUSED_TTL_S = 7 * 24 * 3600


def job_refusal(job: Job, queue_name: str) -> str | None:
    """Why ``job`` may not run from ``queue_name``, or None."""
    try:
        function, args, kwargs = job.func_name, job.args, job.kwargs
    except DeserializationError:
        return "the job's data is not JSON (a pickled or corrupt job)"
    except Exception as exc:  # noqa: BLE001 - whatever a forged job breaks is a refusal
        return f"the job cannot be read ({type(exc).__name__})"
    if job.origin != queue_name:
        return f"the job claims queue {job.origin!r} but was taken from {queue_name!r}"
    for name in ("_success_callback_name", "_failure_callback_name", "_stopped_callback_name"):
        if getattr(job, name, None):
            return "the job names a callback; arena jobs have none"
    if getattr(job, "_instance", None) is not None:
        return "the job is a method call on an object; arena jobs are plain functions"
    return payloads.refusal(queue_name, function, args, kwargs)


def _reap_abandoned() -> None:
    """The job folders a worker (or a work horse) that ended in the middle of a job left, with the build cache it had
    mounted in memory (evaluator/host/folders.py); logged, never raising."""
    import tempfile

    from evaluator.host.folders import reap_abandoned, workdir_root

    try:
        removed = reap_abandoned(workdir_root() or tempfile.gettempdir())
    except OSError as exc:
        logger.warning("could not look for job folders left by ended workers: %s", exc)
        return
    if removed:
        logger.warning("removed %d job folder(s) left by ended workers", removed)


class _Guarded:
    serializer_path = SERIALIZER

    def __init__(self, queues: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["serializer"] = JSONSerializer
        if isinstance(queues, (list, tuple)):
            queues = [q if isinstance(q, str) else q.name for q in queues]
        super().__init__(queues, *args, **kwargs)
        names = self.queue_names()
        web = [n for n in names if n == WEB_QUEUE]
        if web and len(web) != len(names):
            raise ValueError(
                f"a worker serves the web queue alone (it holds the database) or only worker queues "
                f"(they run code under test); got {', '.join(names)}"
            )
        self.serves_web = bool(web)
        if not self.serves_web:
            signing.hold_key()
            _reap_abandoned()

    def execute_job(self, job: Job, queue: Any) -> None:
        why = job_refusal(job, queue.name)
        if why is not None:
            self._refuse(job, queue, why)
            return
        try:
            super().execute_job(job, queue)
        finally:
            if not self.serves_web:
                # What the job's solution left in its build cache that no build tool made goes now, and the cache is
                # brought back under its total cap (evaluator/host/build_cache.py): the host's disk, not a solution's.
                from evaluator.host import build_cache

                build_cache.maintain_logged()
                _reap_abandoned()

    def _refuse(self, job: Job, queue: Any, why: str) -> None:
        logger.error("worker %s refused job %s from queue %s: %s", self.name, job.id, queue.name, why)
        self.log.error("Worker %s: refused job %s from %s: %s", self.name, job.id, queue.name, why)
        registry = FailedJobRegistry(
            queue.name, connection=self.connection, job_class=self.job_class, serializer=self.serializer
        )
        with self.connection.pipeline() as pipe:
            pipe.hset(job.key, mapping={"status": JobStatus.FAILED.value, "exc_info": f"refused: {why}"})
            pipe.zadd(registry.key, {job.id: time.time() + REFUSED_TTL_S})
            pipe.execute()


SCHEDULER_CHECK_S = 5.0


class _WaitsForRedis:
    """A Redis that restarts or goes away is waited for, never the end of the worker. RQ waits for it around its
    blocking dequeue only; every other step of its idle loop (the heartbeat, the suspension check, the maintenance
    pass that cleans the registries, the worker-state write before each dequeue) and the monitor's writes while a
    job runs would otherwise end the worker with "found an unhandled exception", and with it the web worker's
    scheduler, or leave a running evaluation without its worker. Its back-off stops growing at
    ``max_connection_wait_time``, so a worker is back within seconds of Redis rather than RQ's minute."""

    max_connection_wait_time = SCHEDULER_CHECK_S

    def _redis_step(self, what: str, step: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """Runs one of RQ's steps; a Redis that cannot be reached is logged and waited for by the dequeue that
        follows (or by the next interval, while a job runs) instead of ending the worker. (reached, result)."""
        try:
            return True, step(*args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            self.log.warning("Worker %s: %s, Redis cannot be reached (%s)", self.name, what, exc)
            return False, None

    def heartbeat(self, *args: Any, **kwargs: Any) -> Any:
        # called on every turn of the work loop, and after every job
        reached, beat = self._redis_step("heartbeat failed", super().heartbeat, *args, **kwargs)
        if reached:
            self.after_heartbeat()
        return beat

    def after_heartbeat(self) -> None:
        """What the worker does after each heartbeat that reached Redis."""

    def check_for_suspension(self, burst: bool) -> None:
        self._redis_step("cannot read the suspension flag", super().check_for_suspension, burst)

    def run_maintenance_tasks(self) -> None:
        # cleans the registries: the first thing a new worker does; the next turn runs it again
        self._redis_step("maintenance skipped", super().run_maintenance_tasks)

    def maintain_heartbeats(self, job: Job) -> None:
        # while a job runs: the forking worker's monitor, every interval; the job goes on
        self._redis_step("job heartbeat failed", super().maintain_heartbeats, job)

    def set_current_job_working_time(self, *args: Any, **kwargs: Any) -> None:
        # the monitor's other write, before each beat
        self._redis_step("cannot record the job's working time", super().set_current_job_working_time, *args, **kwargs)

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        wait = 1.0
        while True:
            try:
                return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                # RQ retries the dequeue itself, but not the worker-state write it makes first
                self.log.warning(
                    "Worker %s: Redis cannot be reached before the dequeue (%s); retrying in %.0f s",
                    self.name,
                    exc,
                    wait,
                )
                time.sleep(wait)
                wait = min(wait * self.exponential_backoff_factor, self.max_connection_wait_time)


class ArenaWorker(_Guarded, _WaitsForRedis, Worker):
    """A forking worker. Started with the scheduler (the web worker: ``rqworker web --with-scheduler``, which puts
    retried replies back on the queue), it checks every SCHEDULER_CHECK_S seconds of its work loop that the
    scheduler's process is alive, and starts it again when it is not: the scheduler process exits when Redis
    restarts or goes away, and RQ itself looks only every 10 minutes. While it holds a scheduler its blocking dequeue
    waits at most that long, so an idle worker checks as often as a busy one."""

    scheduler_check_s = SCHEDULER_CHECK_S
    _keep_scheduler = False
    _scheduler_checked = 0.0
    _scheduler_owner: int | None = None  # the process that started the scheduler, its parent

    @property
    def dequeue_timeout(self) -> int:
        timeout = super().dequeue_timeout
        if self._keep_scheduler:
            return max(1, min(timeout, math.ceil(self.scheduler_check_s)))
        return timeout

    def _start_scheduler(self, burst: bool = False, *args: Any, **kwargs: Any) -> None:
        super()._start_scheduler(burst, *args, **kwargs)
        self._keep_scheduler = not burst and self.scheduler is not None  # a burst worker enqueues once, then quits
        self._scheduler_checked = time.monotonic()
        self._scheduler_owner = os.getpid()

    def after_heartbeat(self) -> None:
        self.scheduler_keep_alive()

    def scheduler_keep_alive(self, *, force: bool = False) -> bool:
        """Starts the scheduler again if its process died (True when it did), or takes its locks again if Redis lost
        them while it lived. At most every scheduler_check_s, and only in the process that started it: a job's work
        horse is a fork of the worker and heartbeats too, but the scheduler is not its child (``is_alive`` asserts
        that it is), and a second scheduler started from a horse would die with it."""
        scheduler = self.scheduler
        if not self._keep_scheduler or scheduler is None or os.getpid() != self._scheduler_owner:
            return False
        now = time.monotonic()
        if not force and now - self._scheduler_checked < self.scheduler_check_s:
            return False
        self._scheduler_checked = now
        process = scheduler._process
        try:
            if process is not None and process.is_alive():
                # it lived through a Redis restart, but its locks did not (its heartbeat only extends them): take
                # them again in its name, so that no other worker's scheduler starts beside it
                for name in scheduler.acquired_locks:
                    self.connection.set(
                        scheduler.get_locking_key(name), process.pid, nx=True, ex=scheduler.interval + 60
                    )
                return False
            scheduler._acquired_locks = set()  # the locks it held died with Redis or with it: take them afresh
            scheduler.acquire_locks(auto_start=True)
        except RedisError as exc:
            self.log.warning(
                "Worker %s: the scheduler is not running and Redis cannot be reached (%s); will retry", self.name, exc
            )
            return False
        restarted = scheduler._process is not None and scheduler._process is not process
        if restarted:
            self.log.warning(
                "Worker %s: the scheduler was not running (Redis restarted?); started it again, PID %s",
                self.name,
                scheduler._process.pid,
            )
        return restarted


class ArenaSimpleWorker(_Guarded, SimpleWorker):
    pass


class ArenaWarmWorker(_Guarded, _WaitsForRedis, SimpleWorker):
    """An evaluation worker for GPU hosts: jobs run in the worker's own process, so the sandboxes it starts ahead after
    each job for the next one (evaluator/host/pool.py) are still there when the next job comes; a forking worker
    would lose them with each job's process. Nothing of the solution runs in this process either way.

    RQ's SimpleWorker sends no heartbeat while a job runs (the portal's reaper would then see a dead host only at
    the job's limit); this one beats every ``job_monitoring_interval`` from a thread, as a forking worker does."""

    def __init__(self, queues: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(queues, *args, **kwargs)
        if self.serves_web:
            raise ValueError("ArenaWarmWorker serves evaluation queues; the web worker is ArenaWorker")
        from evaluator.host import pool

        pool.enable()

    def get_heartbeat_ttl(self, job: Job) -> int:
        return Worker.get_heartbeat_ttl(self, job)  # a forking worker's: the next beat's interval plus a minute

    def execute_job(self, job: Job, queue: Any) -> None:
        done = threading.Event()
        started = time.monotonic()
        self.current_job_working_time = 0

        def beat() -> None:
            while not done.wait(self.job_monitoring_interval):
                if getattr(self, "execution", None) is None:
                    continue
                self.current_job_working_time = time.monotonic() - started
                try:
                    self.maintain_heartbeats(job)
                except RedisError as exc:  # the next beat tries again; the reaper allows for a missed one
                    self.log.warning("Worker %s: heartbeat failed (%s)", self.name, exc)

        beating = threading.Thread(target=beat, name="arena-job-heartbeat", daemon=True)
        beating.start()
        try:
            super().execute_job(job, queue)
        finally:
            done.set()
            beating.join(timeout=5)
            self.hold_next()

    def hold_next(self) -> None:
        """Once a job has ended (its evaluation replied), the next evaluation's sandboxes are started ahead for the
        profile it ran on (evaluator/host/pool.py): outside the evaluation's path. What fails here is logged; the next
        evaluation then starts its own, as on a worker that holds none."""
        try:
            from evaluator.host.evaluate import hold_next

            hold_next()
        except Exception as exc:  # noqa: BLE001 - a pair not started ahead must not end the worker
            self.log.warning("Worker %s: the next evaluation's sandboxes were not started ahead (%s)", self.name, exc)
