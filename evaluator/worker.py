"""The only RQ worker classes the arena runs: every queue speaks JSON (never pickle), and a worker runs only the job
functions allowed on the queue a job came from, with a payload of the contract's shape
(``evaluator/contract/payloads.py``). Anything else — an unknown function (``os.system``), a pickled job, extra
callbacks, a malformed payload — is refused: logged, moved to the failed registry, never executed.

``ArenaWorker`` forks a work horse per job (``rq worker --worker-class evaluator.worker.ArenaWorker``, and the web
worker through settings' ``RQ["WORKER_CLASS"]``); ``ArenaSimpleWorker`` runs jobs in its own process (tests).
A worker serves either the web queue or worker queues, never both: the web worker holds the database, the others
run code under test. A worker of the second kind takes its signing key out of the environment when it starts."""

from __future__ import annotations

import logging
import time
from typing import Any

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
            raise ValueError(f"a worker serves the web queue alone (it holds the database) or only worker queues "
                             f"(they run code under test); got {', '.join(names)}")
        self.serves_web = bool(web)
        if not self.serves_web:
            signing.hold_key()

    def execute_job(self, job: Job, queue: Any) -> None:
        why = job_refusal(job, queue.name)
        if why is not None:
            self._refuse(job, queue, why)
            return
        super().execute_job(job, queue)

    def _refuse(self, job: Job, queue: Any, why: str) -> None:
        logger.error("worker %s refused job %s from queue %s: %s", self.name, job.id, queue.name, why)
        self.log.error("Worker %s: refused job %s from %s: %s", self.name, job.id, queue.name, why)
        registry = FailedJobRegistry(queue.name, connection=self.connection, job_class=self.job_class,
                                     serializer=self.serializer)
        with self.connection.pipeline() as pipe:
            pipe.hset(job.key, mapping={"status": JobStatus.FAILED.value, "exc_info": f"refused: {why}"})
            pipe.zadd(registry.key, {job.id: time.time() + REFUSED_TTL_S})
            pipe.execute()


class ArenaWorker(_Guarded, Worker):
    pass


class ArenaSimpleWorker(_Guarded, SimpleWorker):
    pass
