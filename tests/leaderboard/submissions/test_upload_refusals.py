"""A bad upload is refused with a message saying what is wrong and what to do; nothing is stored or queued."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rq import Queue
from rq.serializers import JSONSerializer

from leaderboard.models import Problem, Submission
from leaderboard.lifecycle.signatures import nonce_for
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

GOOD = CORRECT.read_text()

# (case, problem, profile, filename, content, field, words the message must hold)
CASES = [
    (
        "syntax_error",
        ALL_REDUCE,
        "cpu-gloo-2",
        "s.py",
        b"def solution(x:\n    return x\n",
        "source",
        ["not valid Python", "line 1"],
    ),
    (
        "no_solution",
        ALL_REDUCE,
        "cpu-gloo-2",
        "s.py",
        b"import torch\n\ndef solve(x):\n    return x\n",
        "source",
        ["no top-level `solution`", "def solution"],
    ),
    (
        "solution_only_nested",
        ALL_REDUCE,
        "cpu-gloo-2",
        "s.py",
        b"class K:\n    def solution(self, x):\n        return x\n",
        "source",
        ["no top-level `solution`"],
    ),
    (
        "unknown_problem",
        "collectives/no_such_thing",
        "cpu-gloo-2",
        "s.py",
        GOOD.encode(),
        "problem",
        ["no problem 'collectives/no_such_thing'", "Pick one"],
    ),
    (
        "unknown_profile",
        ALL_REDUCE,
        "tpu-v9-1024",
        "s.py",
        GOOD.encode(),
        "profile",
        ["no hardware profile 'tpu-v9-1024'", "cpu-gloo-2"],
    ),
    (
        "world_size_unsupported",
        "collectives/four_only",
        "cpu-gloo-2",
        "s.py",
        GOOD.encode(),
        "profile",
        ["runs on 4 ranks", "cpu-gloo-2 has 2", "cpu-gloo-4"],
    ),
    (
        "not_utf8",
        ALL_REDUCE,
        "cpu-gloo-2",
        "s.py",
        b"def solution(x):\n    return x  # \xff\xfe\n",
        "source",
        ["not UTF-8"],
    ),
    (
        "too_large",
        ALL_REDUCE,
        "cpu-gloo-2",
        "s.py",
        GOOD.encode() + b"#" * (300 * 1024),
        "source",
        ["limit is 256 KiB"],
    ),
    ("not_python_file", ALL_REDUCE, "cpu-gloo-2", "s.cu", GOOD.encode(), "source", ["not a Python file", ".py"]),
    ("empty", ALL_REDUCE, "cpu-gloo-2", "s.py", b"   \n", "source", ["empty"]),
]


@pytest.fixture
def four_only_problem(problems):
    """A problem that runs only on 4 ranks (no such problem ships today), to refuse a 2-rank profile."""
    base = Problem.objects.get(pk=ALL_REDUCE)
    base.pk, base.world_sizes = "collectives/four_only", [4]
    base.save(force_insert=True)
    return base


def _assert_nothing_stored(redis_conn):
    assert Submission.objects.count() == 0
    for name in ("cpu-gloo-2", "cpu-gloo-4", "web"):
        assert Queue(name, connection=redis_conn).count == 0


@pytest.mark.parametrize("case,problem,profile,filename,content,field,words", CASES, ids=[c[0] for c in CASES])
def test_api_refuses_bad_upload_with_a_clear_message(
    case,
    problem,
    profile,
    filename,
    content,
    field,
    words,
    four_only_problem,
    api_client,
    redis_conn,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            "/api/submissions/",
            {"problem": problem, "profile": profile, "file": SimpleUploadedFile(filename, content)},
            format="multipart",
        )
    assert response.status_code == 400, response.content
    body = response.json()
    message = " ".join(body["errors"][field])
    for word in words:
        assert word in message, message
    assert body["detail"] == body["errors"][field][0]
    _assert_nothing_stored(redis_conn)


@pytest.mark.parametrize(
    "case,problem,profile,filename,content,field,words",
    [c for c in CASES if c[0] not in ("unknown_problem", "unknown_profile")],
    ids=[c[0] for c in CASES if c[0] not in ("unknown_problem", "unknown_profile")],
)
def test_web_form_refuses_bad_upload_and_says_what_to_fix(
    case,
    problem,
    profile,
    filename,
    content,
    field,
    words,
    four_only_problem,
    web_client,
    redis_conn,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        response = web_client.post(
            reverse("submission-create"),
            {"problem": problem, "profile": profile, "file": SimpleUploadedFile(filename, content)},
        )
    assert response.status_code == 400
    form = response.context["form"]
    shown = field if field != "source" else "file"
    message = " ".join(form.errors[shown])
    for word in words:
        assert word in message, message
    html = response.content.decode()
    assert 'role="alert"' in html
    _assert_nothing_stored(redis_conn)


def test_web_form_refuses_an_unknown_problem(problems, web_client, redis_conn):
    response = web_client.post(
        reverse("submission-create"), {"problem": "collectives/no_such_thing", "profile": "cpu-gloo-2", "source": GOOD}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in " ".join(response.context["form"].errors["problem"])
    _assert_nothing_stored(redis_conn)


def test_json_upload_needs_source_or_file(problems, api_client, redis_conn):
    response = api_client.post("/api/submissions/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2"}, format="json")
    assert response.status_code == 400
    assert "`source`" in response.json()["detail"]
    _assert_nothing_stored(redis_conn)


def test_upload_needs_a_token(problems, client, redis_conn):
    response = client.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD},
        content_type="application/json",
    )
    assert response.status_code in (401, 403)
    _assert_nothing_stored(redis_conn)


def test_web_form_needs_a_signed_in_user(problems, client):
    response = client.get(reverse("submission-create"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_json_source_upload_is_queued_after_commit(
    problems, api_client, redis_conn, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            "/api/submissions/",
            {"problem": ALL_REDUCE, "profile": "cpu-gloo-4", "source": GOOD, "filename": "mine.py"},
            format="json",
        )
    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    assert submission.filename == "mine.py" and submission.job_id == f"submission-{submission.pk}-1"
    queue = Queue("cpu-gloo-4", connection=redis_conn, serializer=JSONSerializer)
    assert queue.job_ids == [submission.job_id]
    job = queue.fetch_job(submission.job_id)
    assert job.func_name == "evaluator.host.jobs.evaluate_job"
    spec, submission_id, nonce = job.args
    assert submission_id == submission.pk and nonce == nonce_for(submission.job_id)
    assert spec["problem_id"] == ALL_REDUCE and spec["profile"] == "cpu-gloo-4"
    assert spec["solution_source"] == GOOD and spec["problem_version"] == submission.problem_version
    assert job.timeout == submission.job_timeout_s == 504


def test_a_retired_problem_takes_no_new_submissions(problems, api_client, redis_conn):
    Problem.objects.filter(pk=ALL_REDUCE).update(is_active=False)
    response = api_client.post(
        "/api/submissions/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD}, format="json"
    )
    assert response.status_code == 400 and "retired" in response.json()["detail"]
    _assert_nothing_stored(redis_conn)
