"""Faults with real processes: worker subprocesses started as `make run` starts them (the evaluation worker apart from
the web worker, with no database in its environment), a redis-server of the tests' own that they kill
and restart (no persistence, so it comes back empty), and PostgreSQL refusing the database for a while. Each ends
with every submission finished or back in the queue, and with exactly one result per submission in the rankings.

PostgreSQL only: the workers are separate processes and must see the test database (SQLite's is in memory).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from evaluator.contract.jobs import MARK_RUNNING, RECORD_RESULT
from django.conf import settings
from django.utils import timezone
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from evaluator.host.worker import ArenaSimpleWorker

from leaderboard.submissions.reaper import submissions_reap
from leaderboard.submissions.services import submission_create
from leaderboard.rankings.selectors import problem_ranking
from leaderboard.models import Problem, Result, Submission
from tests.leaderboard.faults import DatabaseBlock, RedisServer, Worker, alive, descendants, kill_tree, wait_for
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

REPLY_RETRIES = 30  # the workers of the database test retry replies every second, up to this many times
# A correct solution that takes two seconds to import, so a worker can be killed while it evaluates it.
SLOW_CORRECT = CORRECT.read_text() + "\nimport time as _time\n\n_time.sleep(2)\n"
# One that never gets ready: the job's limit is reached long before the evaluator's setup limit (120 s).
HANGING = CORRECT.read_text() + "\nimport time as _time\n\n_time.sleep(60)\n"


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def spare_redis(redis_server, db):
    """Every RQ queue of the portal points at the tests' own redis-server for this test."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("fault tests run worker subprocesses that need a shared PostgreSQL database (DATABASE_URL)")
    if redis_server.process is None:
        redis_server.start()
    saved = {name: config["URL"] for name, config in settings.RQ_QUEUES.items()}
    for config in settings.RQ_QUEUES.values():
        config["URL"] = redis_server.url
    redis_server.client().flushdb()
    yield redis_server
    for name, url in saved.items():
        settings.RQ_QUEUES[name]["URL"] = url
    if redis_server.process is None:
        redis_server.start()


def _submit(user, source: str) -> Submission:
    submission = submission_create(user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=source)
    submission.refresh_from_db()
    return submission


def _later(seconds: float) -> timezone.datetime:
    return timezone.now() + timedelta(seconds=seconds)


def _recorded_once(*submissions: Submission) -> None:
    """One result per submission, and the ranking shows the author once, with one of them."""
    for submission in submissions:
        assert Result.objects.filter(submission=submission).count() == 1
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile="cpu-gloo-2")
    assert len(ranking) == 1 and ranking[0].submission_id in {s.pk for s in submissions}


def _queue(name: str, conn) -> Queue:
    return Queue(name, connection=conn, serializer=JSONSerializer)


def _serve(tmp_path, spare_redis, until, *, timeout: float, what: str, web_env: dict | None = None, **env: str) -> str:
    """Runs an evaluation worker (cpu-gloo-2) and the web worker, two processes as `make run` starts them, until
    ``until()`` holds; stops both and returns their logs."""
    evaluation = Worker(tmp_path / "eval.log", spare_redis.url, "cpu-gloo-2", **env)
    web = Worker(tmp_path / "web.log", spare_redis.url, "web", **(web_env or {}))
    try:
        try:
            wait_for(until, timeout=timeout, interval=0.2, what=what)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; evaluation worker:\n{evaluation.output()}\nweb worker:\n{web.output()}"
            ) from None
    finally:
        evaluation.stop()
        web.stop()
    return evaluation.output() + web.output()


def _finished(*submissions: Submission):
    return lambda: (
        Submission.objects.filter(pk__in=[s.pk for s in submissions], state="finished").count() == len(submissions)
    )


def test_a_worker_killed_mid_job_is_requeued_by_the_reaper_and_evaluated_once(spare_redis, problems, user, tmp_path):
    conn = spare_redis.client()
    submission = _submit(user, SLOW_CORRECT)
    first_job = submission.job_id
    killed_worker = Worker(tmp_path / "w1.log", spare_redis.url, "cpu-gloo-2")

    def job():
        return Job.fetch(first_job, connection=conn, serializer=JSONSerializer)

    wait_for(lambda: job().get_status() == "started", timeout=20, what="the worker to start the job")
    wait_for(lambda: len(descendants(killed_worker.pid)) >= 3, timeout=10, what="the work horse and its 2 ranks")
    killed = kill_tree(killed_worker.pid)  # SIGKILL: the worker, its work horse and the rank processes
    killed_worker.process.wait(timeout=10)
    wait_for(lambda: not alive(killed), timeout=10, what="the killed processes to be gone")

    assert job().get_status() == "started"  # nobody is left to say otherwise
    web = _queue("web", conn)
    assert [j.func_name for j in web.jobs] == [MARK_RUNNING]  # no result will ever come
    ArenaSimpleWorker([web], connection=conn).work(burst=True)
    submission.refresh_from_db()
    assert submission.state == "running"

    # RQ's heartbeat entry for the job is still in the future: the reaper leaves it alone and notes the heartbeat.
    report = submissions_reap()
    assert (report.requeued, report.failed) == ([], [])
    submission.refresh_from_db()
    assert submission.heartbeat_at is not None
    # Past it (a forking worker pushes it 60-90 s ahead), the worker is gone: the attempt failed, a new one is queued.
    report = submissions_reap(now=_later(200))
    assert report.requeued == [submission.pk]
    submission.refresh_from_db()
    assert (submission.state, submission.enqueue_count) == ("queued", 2)
    assert _queue("cpu-gloo-2", conn).job_ids == [f"submission-{submission.pk}-2"]

    logs = _serve(tmp_path, spare_redis, _finished(submission), timeout=60, what="the new attempt to finish")
    submission.refresh_from_db()
    assert (submission.state, submission.verdict) == ("finished", "passed"), logs
    assert submission.job_id == f"submission-{submission.pk}-2"
    _recorded_once(submission)


def test_submissions_queued_when_redis_restarts_or_is_down_are_requeued_and_evaluated(
    spare_redis, problems, api_client, tmp_path, settings
):
    settings.ARENA_QUEUED_JOBS_PER_USER = 2  # both of this user's submissions may be in Redis: this is about loss
    conn = spare_redis.client()
    body = {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()}
    lost = api_client.post("/api/submissions/", body, format="json")
    assert lost.status_code == 201
    assert _queue("cpu-gloo-2", conn).count == 1

    spare_redis.restart()  # no persistence: the queue is gone
    conn = spare_redis.client()
    assert _queue("cpu-gloo-2", conn).count == 0

    spare_redis.stop()
    never_queued = api_client.post("/api/submissions/", body, format="json")  # Redis is down: stored, not queued
    assert never_queued.status_code == 201, never_queued.content
    spare_redis.start()
    conn = spare_redis.client()

    ids = sorted([lost.json()["id"], never_queued.json()["id"]])
    assert set(Submission.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"queued"}
    report = submissions_reap(now=_later(settings.ARENA_REAP_GRACE_S + 1))
    assert sorted(report.requeued) == ids
    assert sorted(_queue("cpu-gloo-2", conn).job_ids) == sorted(f"submission-{i}-2" for i in ids)

    submissions = list(Submission.objects.filter(pk__in=ids))
    logs = _serve(tmp_path, spare_redis, _finished(*submissions), timeout=60, what="both to finish")
    submissions = list(Submission.objects.filter(pk__in=ids))
    for submission in submissions:
        assert (submission.state, submission.verdict, submission.enqueue_count) == ("finished", "passed", 2), logs
    _recorded_once(*submissions)


def test_a_job_past_its_limit_is_retried_then_ends_as_infra_error(spare_redis, problems, user, tmp_path, settings):
    settings.ARENA_JOB_TIMEOUT_FACTOR = 0.007  # 3 s instead of 504 s
    settings.ARENA_MAX_ENQUEUES = 2
    submission = _submit(user, HANGING)
    assert submission.job_timeout_s == 3

    # the job's limit is set where it is enqueued: the web worker re-enqueues the second attempt
    logs = _serve(
        tmp_path,
        spare_redis,
        _finished(submission),
        timeout=60,
        what="both attempts to end",
        web_env={"ARENA_JOB_TIMEOUT_FACTOR": "0.007", "ARENA_MAX_ENQUEUES": "2"},
    )

    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.enqueue_count) == ("finished", "infra_error", 2), logs
    message = submission.result.document["message"]
    assert "ran past the job's limit of 3 s" in message and "Attempt 2 of 2" in message
    assert Result.objects.filter(submission=submission).count() == 1
    assert problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile="cpu-gloo-2") == []


def _failed_reply(conn) -> Job | None:
    """A record_result job that has failed at least once and was scheduled again by RQ's Retry."""
    for key in conn.scan_iter("rq:job:*"):
        parts = key.decode().split(":")
        if len(parts) != 3:
            continue
        try:
            job = Job.fetch(parts[2], connection=conn, serializer=JSONSerializer)
        except Exception:
            continue
        if job.func_name == RECORD_RESULT and (job.retries_left or 0) < REPLY_RETRIES:
            return job
    return None


def test_a_result_arriving_while_the_database_is_down_is_stored_once_it_is_back(spare_redis, problems, user, tmp_path):
    conn = spare_redis.client()
    submission = _submit(user, CORRECT.read_text())
    worker = evaluation = None
    try:
        with DatabaseBlock() as database:
            # the worker host sets how often its replies are retried; the web worker's scheduler brings them back
            evaluation = Worker(
                tmp_path / "eval.log",
                spare_redis.url,
                "cpu-gloo-2",
                ARENA_REPLY_RETRY_INTERVALS=",".join(["1"] * REPLY_RETRIES),
            )
            worker = Worker(tmp_path / "w.log", spare_redis.url, "web", scheduler=True)
            reply = wait_for(
                lambda: _failed_reply(conn),
                timeout=40,
                interval=0.2,
                what="the result's reply to fail on the unreachable database",
            )
            database.lift()
        try:
            wait_for(
                lambda: Submission.objects.filter(pk=submission.pk, state="finished").exists(),
                timeout=30,
                interval=0.2,
                what="the retried reply to store the result",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the worker's log:\n{worker.output()}\n{evaluation.output()}") from None
    finally:
        for process in (evaluation, worker):
            if process is not None:
                process.stop()

    assert 'database "' in worker.output() and "is not currently accepting connections" in worker.output()
    reply.refresh()
    assert reply.get_status() == "finished" and reply.retries_left < REPLY_RETRIES  # stored after retries
    submission.refresh_from_db()
    assert (submission.state, submission.verdict, submission.enqueue_count) == ("finished", "passed", 1)
    _recorded_once(submission)
