"""The fair queue: a user has at most settings.ARENA_QUEUED_JOBS_PER_USER jobs on a queue in RQ at a time; the rest
stay ``queued`` in the database and are released, user by user in turn, as results are recorded, as submissions are
cancelled, and by the reaper. One user's model run of many attempts then delays another user's single submission by
at most one evaluation. Real Redis, a real RQ worker running the real evaluator (burst runs, as deployments keep the
evaluation worker and the web worker apart)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rq import Queue
from rq.serializers import JSONSerializer

from evaluator.host.worker import ArenaSimpleWorker
from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun, Submission
from leaderboard.submissions import queueing
from leaderboard.submissions.reaper import submissions_reap
from leaderboard.submissions.services import submission_cancel, submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

ATTEMPTS = 6
MANIFEST = {
    "model": "fair-coder",
    "provider": "Test Labs",
    "protocol": "zero-shot",
    "k": ATTEMPTS,
    "turn_budget": 0,
    "tokens": 1000,
    "wall_time_s": 60,
    "hardware": "cpu-gloo-2",
    "date": "2026-11-29",
    "open_weights": True,
}


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _upload_run(user) -> ModelRun:
    archive = build_archive(
        MANIFEST, {(ALL_REDUCE, i): CORRECT.read_text() + f"\n# attempt {i}\n" for i in range(1, ATTEMPTS + 1)}
    )
    response = _client(user).post(
        "/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", archive)}, format="multipart"
    )
    assert response.status_code == 201, response.content
    return ModelRun.objects.get(pk=response.json()["id"])


def _submit(user, note: str = "") -> Submission:
    response = _client(user).post(
        "/api/submissions/",
        {
            "problem": ALL_REDUCE,
            "profile": "cpu-gloo-2",
            "filename": "solution.py",
            "source": CORRECT.read_text() + f"\n# {note}\n",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return Submission.objects.get(pk=response.json()["id"])


def _waiting(redis_conn) -> list[int]:
    """The submissions whose jobs wait on the cpu-gloo-2 queue, in the order a worker takes them."""
    queue = Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer)
    return [int(job_id.split("-")[1]) for job_id in queue.get_job_ids()]


def test_one_users_many_attempts_delay_another_users_submission_by_at_most_one_evaluation(
    problems, redis_conn, django_user_model
):
    heavy = django_user_model.objects.create_user(username="many", password="a-long-test-password-1")
    light = django_user_model.objects.create_user(username="one", password="a-long-test-password-2")
    run = _upload_run(heavy)
    attempts = list(run.attempts.order_by("id"))
    assert len(attempts) == ATTEMPTS

    # one of the run's jobs is in RQ; the others wait in the database, queued, without a job
    assert _waiting(redis_conn) == [attempts[0].pk]
    held = Submission.objects.filter(pk__in=[a.pk for a in attempts[1:]])
    assert {(s.state, s.job_id, s.enqueue_count) for s in held} == {("queued", "", 0)}
    assert api_state(heavy, attempts[1]) == "queued"

    single = _submit(light, "the other user's one submission")
    assert _waiting(redis_conn) == [attempts[0].pk, single.pk]

    # one evaluation worker, then the web worker that records the results, until nothing is left
    most_in_redis = 0
    for _ in range(4 * ATTEMPTS):
        evaluated = ArenaSimpleWorker(["cpu-gloo-2"], connection=redis_conn).work(burst=True)
        recorded = ArenaSimpleWorker(["web"], connection=redis_conn).work(burst=True)
        waiting = _waiting(redis_conn)
        most_in_redis = max(most_in_redis, sum(1 for pk in waiting if pk != single.pk))
        if not (evaluated or recorded):
            break
    assert most_in_redis <= 1  # the heavy user never had more than one job in RQ

    everything = [*attempts, single]
    rows = Submission.objects.filter(pk__in=[s.pk for s in everything])
    assert {(s.state, s.verdict) for s in rows} == {("finished", "passed")}, [
        (s.pk, s.state, s.verdict, s.job_id) for s in rows
    ]
    order = [s.pk for s in rows.order_by("started_at", "pk")]
    assert order.index(single.pk) <= 1, order  # started after at most one of the run's attempts
    assert [pk for pk in order if pk != single.pk] == [a.pk for a in attempts]  # the run's own order is kept
    assert all(s.enqueue_count == 1 for s in rows)  # each evaluated once: a held row is not a lost job
    run.refresh_from_db()
    assert (run.state, run.attempts_done) == ("finished", ATTEMPTS)


def api_state(user, submission: Submission) -> str:
    return _client(user).get(f"/api/submissions/{submission.pk}/").json()["state"]


def test_held_rows_are_released_user_by_user_in_turn(
    problems, redis_conn, django_user_model, django_capture_on_commit_callbacks
):
    ann, bob = (
        django_user_model.objects.create_user(username=n, password="a-long-test-password-3") for n in ("ann", "bob")
    )
    mine = {u.username: [] for u in (ann, bob)}
    for n in range(3):
        for u in (ann, bob):
            with django_capture_on_commit_callbacks(execute=True):
                mine[u.username].append(
                    submission_create(
                        user=u,
                        problem=ALL_REDUCE,
                        profile="cpu-gloo-2",
                        filename="s.py",
                        source=CORRECT.read_text() + f"#{n}",
                    )
                )
    first_ann, first_bob = mine["ann"][0], mine["bob"][0]
    assert _waiting(redis_conn) == [first_ann.pk, first_bob.pk]

    # the first jobs leave RQ (cancelled): the reaper's pass gives each user their next, in turn
    for s in (first_ann, first_bob):
        with django_capture_on_commit_callbacks(execute=True):
            submission_cancel(submission_id=s.pk, user=s.user)
    assert _waiting(redis_conn) == [mine["ann"][1].pk, mine["bob"][1].pk]  # cancelling released the next

    with django_capture_on_commit_callbacks(execute=True):
        assert submissions_reap().released == []  # nobody has room: nothing more
    assert _waiting(redis_conn) == [mine["ann"][1].pk, mine["bob"][1].pk]

    # with room for two each (or after an outage), one release hands out one row per user per round
    from django.test import override_settings

    with override_settings(ARENA_QUEUED_JOBS_PER_USER=2), django_capture_on_commit_callbacks(execute=True):
        report = submissions_reap()
    assert report.released == [mine["ann"][2].pk, mine["bob"][2].pk]
    assert _waiting(redis_conn) == [mine["ann"][1].pk, mine["bob"][1].pk, mine["ann"][2].pk, mine["bob"][2].pk]
    assert queueing.held_rows().count() == 0
