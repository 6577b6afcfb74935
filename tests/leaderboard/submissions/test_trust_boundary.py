"""The web queue's trust boundary, with a real Redis and real (in-process) RQ workers: only jobs that a worker signed
for the job the portal issued are recorded; anything else put straight into Redis is refused and changes nothing."""

from __future__ import annotations

import pickle
import zlib

import pytest
from rq import Queue
from rq.registry import FailedJobRegistry
from rq.serializers import DefaultSerializer, JSONSerializer

from evaluator.contract import signing
from evaluator.contract.jobs import MARK_RUNNING, RECORD_RESULT
from leaderboard.models import Result, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.lifecycle.signatures import nonce_for
from tests.conftest import TEST_WORKER_KEY
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db(transaction=True)
KEY = (signing.DEFAULT_KEY_ID, TEST_WORKER_KEY.encode())


@pytest.fixture
def victim(problems, user, redis_conn):
    return submission_create(
        user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
    )


def _web(conn, serializer=JSONSerializer) -> Queue:
    return Queue("web", connection=conn, serializer=serializer)


def _unchanged(submission: Submission) -> None:
    row = Submission.objects.get(pk=submission.pk)
    assert row.state == Submission.State.QUEUED and row.verdict is None and row.worker == ""
    assert not Result.objects.filter(submission=submission).exists()


def test_a_forged_result_put_into_redis_is_refused_and_the_victim_unchanged(victim, redis_conn, run_worker, caplog):
    web = _web(redis_conn)
    document = passed_document(987.6)
    job_id = victim.job_id
    # no signature; a signature by a key the portal does not hold; the right key but a guessed nonce; and a stale job
    web.enqueue(RECORD_RESULT, victim.pk, document, job_id, "0" * 32, "")
    web.enqueue(
        RECORD_RESULT,
        victim.pk,
        document,
        job_id,
        nonce_for(job_id),
        signing.sign(RECORD_RESULT, victim.pk, job_id, nonce_for(job_id), document, key=("default", b"guess")),
    )
    web.enqueue(
        RECORD_RESULT,
        victim.pk,
        document,
        job_id,
        "0" * 32,
        signing.sign(RECORD_RESULT, victim.pk, job_id, "0" * 32, document, key=KEY),
    )
    old = f"submission-{victim.pk}-0"
    web.enqueue(
        RECORD_RESULT,
        victim.pk,
        document,
        old,
        nonce_for(old),
        signing.sign(RECORD_RESULT, victim.pk, old, nonce_for(old), document, key=KEY),
    )
    web.enqueue(MARK_RUNNING, victim.pk, "attacker", 1.0, job_id, nonce_for(job_id), "v1:default:" + "0" * 64)
    run_worker("web")
    _unchanged(victim)
    refusals = [
        r.getMessage()
        for r in caplog.records
        if r.name in ("arena.replies", "leaderboard.submissions.results") and r.levelname == "ERROR"
    ]
    assert len(refusals) == 5, refusals


def test_a_correctly_signed_result_for_the_current_job_is_recorded(victim, redis_conn, run_worker):
    document = passed_document(1.5)
    nonce = nonce_for(victim.job_id)
    # a signature over another document does not carry over to this one
    _web(redis_conn).enqueue(
        RECORD_RESULT,
        victim.pk,
        passed_document(99.0),
        victim.job_id,
        nonce,
        signing.sign(RECORD_RESULT, victim.pk, victim.job_id, nonce, document, key=KEY),
    )
    run_worker("web")
    _unchanged(victim)
    _web(redis_conn).enqueue(
        RECORD_RESULT,
        victim.pk,
        document,
        victim.job_id,
        nonce,
        signing.sign(RECORD_RESULT, victim.pk, victim.job_id, nonce, document, key=KEY),
    )
    run_worker("web")
    assert Result.objects.get(submission=victim).speedup == 1.5


def test_an_os_system_job_on_the_web_queue_is_refused_by_the_web_worker(victim, redis_conn, run_worker, tmp_path):
    marker = tmp_path / "owned"
    job = _web(redis_conn).enqueue("os.system", f"touch {marker}")
    job2 = _web(redis_conn).enqueue("leaderboard.submissions.results.result_record")  # a real function, not a job
    run_worker("web")
    assert not marker.exists()
    failed = FailedJobRegistry("web", connection=redis_conn)
    assert {job.id, job2.id} <= set(failed.get_job_ids())
    assert b"refused" in redis_conn.hget(job.key, "exc_info")
    _unchanged(victim)


def test_a_pickled_job_is_refused(victim, redis_conn, run_worker, tmp_path):
    marker = tmp_path / "owned"
    # what an attacker with pickle would send: a job whose data, unpickled, would run code
    job = _web(redis_conn, DefaultSerializer).enqueue(
        RECORD_RESULT, victim.pk, passed_document(9.0), victim.job_id, "n", "s"
    )
    payload = zlib.compress(pickle.dumps(("os.system", None, [f"touch {marker}"], {})))
    evil = _web(redis_conn, DefaultSerializer).enqueue("os.getcwd")
    redis_conn.hset(evil.key, "data", payload)
    run_worker("web")
    assert not marker.exists()
    assert {job.id, evil.id} <= set(FailedJobRegistry("web", connection=redis_conn).get_job_ids())
    _unchanged(victim)


def test_a_worker_job_is_refused_on_the_web_queue_and_web_jobs_on_worker_queues(victim, redis_conn, run_worker):
    web_job = _web(redis_conn).enqueue("evaluator.host.jobs.evaluate_job", {}, victim.pk, "n")
    gpu_job = Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer).enqueue(
        RECORD_RESULT, victim.pk, passed_document(9.0), victim.job_id, "n", "s"
    )
    run_worker("cpu-gloo-2", "web")
    assert web_job.id in FailedJobRegistry("web", connection=redis_conn).get_job_ids()
    assert gpu_job.id in FailedJobRegistry("cpu-gloo-2", connection=redis_conn).get_job_ids()


def test_a_check_hosts_key_cannot_sign_a_verdict_and_a_gpu_hosts_key_cannot_sign_a_check(
    victim, redis_conn, run_worker, settings, caplog
):
    from evaluator.contract.jobs import MARK_CHECKING, RECORD_CHECK

    settings.ARENA_WORKER_KEYS = signing.parse_keys("gpu:evaluations=gpu-host-key,checks:checks=check-host-key")
    gpu, checks = ("gpu", b"gpu-host-key"), ("checks", b"check-host-key")
    document, job_id = passed_document(987.6), victim.job_id
    nonce = nonce_for(job_id)
    # contributors' code runs beside the checks key: whatever it signs with it is no verdict
    _web(redis_conn).enqueue(
        RECORD_RESULT,
        victim.pk,
        document,
        job_id,
        nonce,
        signing.sign(RECORD_RESULT, victim.pk, job_id, nonce, document, key=checks),
    )
    facts = {"worker": "attacker", "started": 1.0}
    _web(redis_conn).enqueue(
        MARK_RUNNING,
        victim.pk,
        "attacker",
        1.0,
        job_id,
        nonce,
        signing.sign(MARK_RUNNING, victim.pk, job_id, nonce, facts, key=checks),
    )
    run_worker("web")
    _unchanged(victim)
    refusals = [r.getMessage() for r in caplog.records if r.name == "arena.replies" and r.levelname == "ERROR"]
    assert len(refusals) == 2 and all("key 'checks' has the role checks" in m for m in refusals), refusals
    # the other way round, at the verification itself: a GPU host's key signs no check report
    report = {"status": "checked"}
    for kind in (RECORD_CHECK, MARK_CHECKING):
        with pytest.raises(signing.SignatureError, match="may not sign"):
            signing.verify(
                signing.sign(kind, 1, "proposal-1-1", "n", report, key=gpu),
                kind,
                1,
                "proposal-1-1",
                "n",
                report,
                settings.ARENA_WORKER_KEYS,
            )
        assert (
            signing.verify(
                signing.sign(kind, 1, "proposal-1-1", "n", report, key=checks),
                kind,
                1,
                "proposal-1-1",
                "n",
                report,
                settings.ARENA_WORKER_KEYS,
            )
            == "checks"
        )
    # and the GPU host's key is what records the verdict
    _web(redis_conn).enqueue(
        RECORD_RESULT,
        victim.pk,
        passed_document(1.5),
        job_id,
        nonce,
        signing.sign(RECORD_RESULT, victim.pk, job_id, nonce, passed_document(1.5), key=gpu),
    )
    run_worker("web")
    assert Result.objects.get(submission=victim).speedup == 1.5


def test_key_roles_are_read_and_unknown_roles_refused():
    keys = signing.parse_keys("gpu:evaluations=a, local:evaluations+checks=b, old=c")
    assert keys["gpu"] == signing.WorkerKey("a", frozenset({"evaluations"}))
    assert keys["local"].roles == frozenset({"evaluations", "checks"}) and keys["old"].roles is None
    with pytest.raises(ValueError, match="role"):
        signing.parse_keys("gpu:admin=a")
    with pytest.raises(ValueError, match="role"):
        signing.parse_keys("gpu:=a")
