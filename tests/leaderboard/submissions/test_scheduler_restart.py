"""The web worker's scheduler comes back after a Redis restart: a real redis-server of the test's own, killed and
started again (no persistence, as in production) under a real `manage.py rqworker web --with-scheduler`; a reply
scheduled afterwards with a retry interval (the ScheduledJobRegistry, where RQ's Retry(interval=...) puts a failed
reply) is still put back on the queue and run, within seconds rather than RQ's 10-minute maintenance pass."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from rq import Queue, Retry
from rq.registry import ScheduledJobRegistry
from rq.serializers import JSONSerializer

from evaluator.contract.jobs import MARK_RUNNING
from leaderboard.models import Submission
from leaderboard.submissions.services import submission_create
from tests.leaderboard.faults import RedisServer, wait_for
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT, signed_reply

pytestmark = pytest.mark.django_db(transaction=True)

LOCK = "rq:scheduler-lock:web"  # RQ's scheduler holds it while it runs (rq.scheduler.SCHEDULER_LOCKING_KEY_TEMPLATE)


@pytest.fixture
def own_redis(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    saved = {name: config["URL"] for name, config in settings.RQ_QUEUES.items()}
    for config in settings.RQ_QUEUES.values():
        config["URL"] = server.url
    yield server
    for name, url in saved.items():
        settings.RQ_QUEUES[name]["URL"] = url
    server.stop()


def _database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"  # the tests' database is a file: the worker process shares it
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_the_scheduler_restarts_after_a_redis_restart_and_a_scheduled_reply_still_runs(
    problems, user, own_redis, tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(
            user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
        )
    submission.refresh_from_db()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        ENV_FILE="",
        REDIS_URL=own_redis.url,
        DATABASE_URL=_database_url(),
        CONN_MAX_AGE="0",
        HTTPS="0",
        PYTHONUNBUFFERED="1",
    )
    log = (tmp_path / "web.log").open("ab")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "web", "--with-scheduler"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def output() -> str:
        log.flush()
        return (tmp_path / "web.log").read_text(errors="replace")[-6000:]

    try:
        client = own_redis.client()
        try:
            wait_for(lambda: client.exists(LOCK), timeout=60, interval=0.2, what="the scheduler to start")
            own_redis.restart()  # everything in Redis is gone, the scheduler's lock too; its process may die
            client = own_redis.client()
            restarted_at = time.monotonic()
            wait_for(lambda: client.exists(LOCK), timeout=45, interval=0.2, what="the scheduler to come back")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; web worker:\n{output()}") from None
        assert time.monotonic() - restarted_at < 45  # RQ alone would wait for its 10-minute maintenance pass
        assert worker.poll() is None, output()

        # a reply scheduled after the restart, as a failed reply's retry is: it waits in the ScheduledJobRegistry
        started = time.time()
        body = {"worker": "gpu-host-3", "started": started}
        nonce, signature = signed_reply(MARK_RUNNING, submission.pk, submission.job_id, body)
        web = Queue("web", connection=client, serializer=JSONSerializer)
        job = web.enqueue_in(
            timedelta(seconds=2),
            MARK_RUNNING,
            submission.pk,
            "gpu-host-3",
            started,
            submission.job_id,
            nonce,
            signature,
            retry=Retry(max=3, interval=[1, 2, 5]),
        )
        assert job.id in ScheduledJobRegistry("web", connection=client, serializer=JSONSerializer).get_job_ids()
        try:
            wait_for(
                lambda: Submission.objects.get(pk=submission.pk).state == "running",
                timeout=45,
                interval=0.2,
                what="the scheduled reply to run",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; web worker:\n{output()}") from None
        assert Submission.objects.get(pk=submission.pk).worker == "gpu-host-3"
    finally:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(timeout=10)
        log.close()
