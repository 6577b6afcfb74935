"""A malformed model-run archive is refused with messages that name the file and the field at fault, and
nothing of it is stored or queued: the run, its submissions and its trajectories are written in one transaction
after the whole archive has been checked."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError
from rq import Queue

from django.core.exceptions import ValidationError
from leaderboard.model_runs.services import model_run_create
from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun, RunScore, Submission, Trajectory
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import CORRECT

GOOD = CORRECT.read_text()
TWO = {("collectives/all_reduce", 1): GOOD, ("collectives/all_reduce", 2): GOOD}
K2 = dict(fx.MANIFEST, k=2)


def _without(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


# (case, archive bytes, words every one of which the refusal must hold)
CASES = [
    ("not_an_archive", b"just some text, not a zip", ["bad.zip", "neither a .zip nor a .tar.gz"]),
    ("no_manifest", build_archive(None, TWO), ["manifest.json is missing"]),
    ("manifest_not_json", build_archive("{model: nope", TWO), ["manifest.json", "not valid JSON", "line 1"]),
    (
        "manifest_field_missing",
        build_archive(_without(K2, "hardware"), TWO),
        ["manifest.json", "'hardware'", "is missing"],
    ),
    ("manifest_field_wrong_type", build_archive(dict(K2, k="two"), TWO), ["manifest.json", "'k'", "an integer"]),
    ("unknown_hardware", build_archive(dict(K2, hardware="tpu-v9"), TWO), ["'hardware'", "tpu-v9"]),
    ("zero_shot_with_turns", build_archive(dict(K2, turn_budget=5), TWO), ["'turn_budget'", "zero-shot"]),
    (
        "attempt_missing",
        build_archive(K2, {("collectives/all_reduce", 1): GOOD}),
        ["attempts/collectives/all_reduce/", "k=2", "attempt_2.py"],
    ),
    (
        "attempt_not_python",
        build_archive(K2, {("collectives/all_reduce", 1): GOOD, ("collectives/all_reduce", 2): "def solution(x:\n"}),
        ["attempts/collectives/all_reduce/attempt_2.py", "not valid Python", "line 1"],
    ),
    (
        "attempt_without_solution",
        build_archive(
            K2, {("collectives/all_reduce", 1): GOOD, ("collectives/all_reduce", 2): "def solve(x):\n    return x\n"}
        ),
        ["attempt_2.py", "`solution`"],
    ),
    (
        "unknown_problem",
        build_archive(K2, {("collectives/all_reduse", 1): GOOD, ("collectives/all_reduse", 2): GOOD}),
        ["attempts/collectives/all_reduse/", "unknown problem", "collectives/all_reduce"],
    ),
    ("stray_file", build_archive(K2, TWO, extra_files={"README.txt": "hi"}), ["README.txt"]),
    (
        "bad_trajectory",
        build_archive(K2, TWO, {("collectives/all_reduce", 1, "json"): "{not json"}),
        ["trajectories/collectives/all_reduce/attempt_1.json", "not valid JSON"],
    ),
]


def _assert_nothing_stored(redis_conn):
    assert ModelRun.objects.count() == 0 and RunScore.objects.count() == 0
    assert Submission.objects.count() == 0 and Trajectory.objects.count() == 0
    for name in ("cpu-gloo-2", "cpu-gloo-4", "web"):
        assert Queue(name, connection=redis_conn).count == 0


@pytest.mark.parametrize("case,data,words", CASES, ids=[c[0] for c in CASES])
def test_api_refuses_a_malformed_archive_naming_what_is_wrong(
    case, data, words, problems, api_client, redis_conn, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            "/api/model-runs/", {"archive": SimpleUploadedFile("bad.zip", data)}, format="multipart"
        )
    assert response.status_code == 400, response.content
    body = response.json()
    text = " ".join(body["errors"]["archive"])
    for word in words:
        assert word in text, (word, text)
    assert body["detail"] == body["errors"]["archive"][0]
    _assert_nothing_stored(redis_conn)


def test_every_problem_of_an_archive_is_reported_at_once(problems, api_client, redis_conn):
    data = build_archive(dict(K2, k=0, date="yesterday"), {("collectives/all_reduce", 1): "def solution(:\n"})
    errors = api_client.post(
        "/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", data)}, format="multipart"
    ).json()["errors"]["archive"]
    text = "\n".join(errors)
    assert "'k'" in text and "'date'" in text and "attempt_1.py" in text, text
    assert len(errors) >= 3
    _assert_nothing_stored(redis_conn)


def test_the_form_shows_each_problem_beside_the_archive_field(problems, web_client, redis_conn):
    data = build_archive(
        _without(K2, "model"), {("collectives/all_reduce", 1): GOOD, ("collectives/all_reduce", 2): "def solution(x:\n"}
    )
    response = web_client.post("/runs/upload/", {"archive": SimpleUploadedFile("run.zip", data)})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="archive-errors"' in html
    assert "manifest.json: the field &#x27;model&#x27; is missing" in html
    assert "attempts/collectives/all_reduce/attempt_2.py: not valid Python at line 1" in html
    _assert_nothing_stored(redis_conn)


def test_an_archive_over_the_size_limit_is_refused_before_it_is_read(problems, api_client, redis_conn, settings):
    settings.ARENA_MAX_ARCHIVE_BYTES = 1000
    data = fx.archive_bytes()
    assert len(data) > 1000
    body = api_client.post(
        "/api/model-runs/", {"archive": SimpleUploadedFile("big.zip", data)}, format="multipart"
    ).json()
    assert "big.zip" in body["detail"] and "more than the" in body["detail"]
    _assert_nothing_stored(redis_conn)


def test_a_failure_half_way_through_storing_leaves_nothing(
    problems, user, redis_conn, monkeypatch, django_capture_on_commit_callbacks
):
    """The archive is valid; the database fails while the trajectories are written, after the run and its
    submissions: the transaction takes them all back and no job is enqueued."""

    def broken(*args, **kwargs):
        raise IntegrityError("simulated failure while storing trajectories")

    monkeypatch.setattr(Trajectory.objects, "bulk_create", broken)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(IntegrityError):
        model_run_create(user=user, filename="run.zip", data=fx.archive_bytes())
    _assert_nothing_stored(redis_conn)


def test_the_same_archive_twice_is_refused(problems, user):
    model_run_create(user=user, filename="run.zip", data=fx.archive_bytes())
    with pytest.raises(ValidationError, match=r"uploaded this very archive already, as model run #\d+"):
        model_run_create(user=user, filename="again.zip", data=fx.archive_bytes())
    assert ModelRun.objects.count() == 1


def test_too_many_runs_being_evaluated_at_once_are_refused(problems, user, settings):
    settings.ARENA_MAX_PENDING_RUNS_PER_USER = 1
    model_run_create(user=user, filename="run.zip", data=fx.archive_bytes())
    other = fx.archive_bytes(manifest=dict(fx.MANIFEST, model="another"))
    with pytest.raises(ValidationError, match="limit is 1"):
        model_run_create(user=user, filename="run2.zip", data=other)


def test_uploading_needs_an_account(problems, client):
    response = client.post("/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", fx.archive_bytes())})
    assert response.status_code in (401, 403)
    assert client.get("/runs/upload/").status_code == 302
    assert ModelRun.objects.count() == 0


def test_a_valid_archive_is_stored_and_each_attempt_enqueued_on_the_runs_profile(
    problems, api_client, redis_conn, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            "/api/model-runs/",
            {"archive": SimpleUploadedFile("run.tar.gz", fx.archive_bytes(fmt="tar.gz"))},
            format="multipart",
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["state"], body["attempts_done"], body["attempts_total"]) == ("queued", 0, 12)
    assert response["Location"].endswith(f"/api/model-runs/{body['id']}/")
    run = ModelRun.objects.get()
    assert (run.model, run.mode, run.k, run.profile, run.precision) == (
        "handworked-coder",
        "zero-shot",
        3,
        "h200-nvlink-2",
        "fp32",
    )
    assert run.manifest["notes"] == fx.MANIFEST["notes"] and json.dumps(run.manifest)
    queue = Queue("h200-nvlink-2", connection=redis_conn)  # the fixture run's hardware (a profile that measures speed)
    # the fair queue: one of the user's jobs in RQ at a time, the other attempts queued in the database without one
    assert queue.count == settings.ARENA_QUEUED_JOBS_PER_USER == 1
    jobs = {job.id for job in queue.get_jobs()}
    attempts = Submission.objects.filter(model_run=run, state="queued")
    assert jobs == {s.job_id for s in attempts.filter(enqueue_count=1)}
    assert attempts.filter(enqueue_count=0, job_id="").count() == 11
    assert sorted(set(Submission.objects.values_list("attempt", flat=True))) == [1, 2, 3]
