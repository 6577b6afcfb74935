"""Test mode through the API and the CLI: a test is queued on its profile's fast lane, evaluated by a real worker
running the real evaluator, visible to its owner only, never on any ranking page or export, and limited per token
(429 with Retry-After once the limit is spent)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.test import override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluator.contract import jobs
from leaderboard import models
from leaderboard.models import Submission
from leaderboard.testmode import jobs as testmode_jobs
from leaderboard.testmode import services as testmode_services
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT, WRONG, passed_document

pytestmark = pytest.mark.django_db(transaction=True)


def _client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_a_test_goes_on_the_fast_lane_and_only_its_owner_sees_it(problems, api_client, redis_conn, django_user_model):
    response = api_client.post(
        "/api/tests/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text(), "timing": True},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["ranked"] is False and body["quick_timing"] is True and body["state"] == "queued"
    assert response["X-RateLimit-Limit"] and response["X-RateLimit-Remaining"] and response["X-RateLimit-Reset"]
    from rq import Queue

    from rq.serializers import JSONSerializer

    fast = Queue(jobs.test_queue("cpu-gloo-2"), connection=redis_conn, serializer=JSONSerializer)
    ranked = Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer)
    assert [j.func_name for j in fast.jobs] == [jobs.EVALUATE_TEST] and ranked.count == 0
    assert fast.jobs[0].args[0]["trials"] < 5 and fast.jobs[0].args[0]["timing_iterations"] < 20
    assert Submission.objects.count() == 0

    assert api_client.get(body["api_url"]).status_code == 200
    assert [t["id"] for t in api_client.get("/api/tests/").json()] == [body["id"]]
    stranger = _client_for(django_user_model.objects.create_user(username="eve", password="a-long-test-password-2"))
    assert stranger.get(body["api_url"]).status_code == 404
    assert stranger.get("/api/tests/").json() == []
    assert APIClient().get(body["api_url"]).status_code in (401, 403)


def test_a_worker_evaluates_a_test_with_the_first_differing_values(problems, api_client, run_worker):
    with WRONG.open("rb") as f:
        response = api_client.post(
            "/api/tests/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": f}, format="multipart"
        )
    assert response.status_code == 201, response.content
    run_worker(jobs.test_queue("cpu-gloo-2"), "web")
    detail = api_client.get(response.json()["api_url"]).json()
    assert detail["state"] == "finished" and detail["verdict"] == "wrong_output", detail["result"]["message"]
    result = detail["result"]
    assert result["test"]["ranked"] is False and result["test"]["quick_timing"] is False
    assert "first at index" in result["message"] and "expected" in result["message"]
    assert len(result["trials"]) == result["test"]["trials"]


def test_a_test_result_appears_on_no_ranking_page_export_or_dataset(problems, api_client, user, client, tmp_path):
    test = models.TestRun.objects.create(
        user=user,
        problem_id=ALL_REDUCE,
        profile="cpu-gloo-2",
        problem_version=1,
        problem_hash="h" * 64,
        filename="unranked_marker.py",
        source="x",
        sha256="f" * 64,
        timing=True,
        job_timeout_s=60,
        job_id="test-x",
    )
    testmode_jobs.test_record_result(test.pk, passed_document(99.0), "test-x", "forged", "v1:default:00")
    test.refresh_from_db()
    assert test.verdict is None  # an unsigned reply is refused
    assert testmode_services.test_run_record(test_id=test.pk, document=passed_document(99.0), job_id="test-x")
    test.refresh_from_db()
    assert test.verdict == "passed"

    ranking = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2").json()
    assert ranking["entries"] == []
    pages = [
        f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2",
        f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2&format=csv",
        f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2&format=json",
        "/",
        "/runs/",
        "/runs/?format=json",
        f"/users/{user.username}/",
        f"/users/{user.username}/?format=json&table=solutions",
        f"/api/problems/{ALL_REDUCE}/results/",
        f"/api/users/{user.username}/",
        "/api/rankings/model-runs/",
    ]
    for url in pages:
        page = client.get(url)
        assert page.status_code == 200, url
        text = page.content.decode()
        assert "unranked_marker" not in text and "f" * 64 not in text and "99.0" not in text, url

    from leaderboard.datasets.export import export_datasets

    out = export_datasets(tmp_path / "export")
    for path in out.root.rglob("*.jsonl"):
        text = path.read_text()
        assert "unranked_marker" not in text and "f" * 64 not in text, path


@override_settings(ARENA_TEST_RATE_PER_MINUTE=2, ARENA_TEST_DAILY_BUDGET=100)
def test_a_rate_limited_token_gets_429_with_retry_after(problems, api_client, redis_conn, django_user_model):
    payload = {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()}
    first = api_client.post("/api/tests/", payload, format="json")
    second = api_client.post("/api/tests/", payload, format="json")
    assert (first.status_code, second.status_code) == (201, 201)
    assert first["X-RateLimit-Limit"] == "100" and first["X-RateLimit-Remaining"] == "99"
    assert first["X-RateLimit-Burst-Limit"] == "2" and second["X-RateLimit-Burst-Remaining"] == "0"
    refused = api_client.post("/api/tests/", payload, format="json")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused["X-RateLimit-Remaining"] == "98"  # a refused request spends nothing
    assert models.TestRun.objects.count() == 2
    # Another token has a budget of its own.
    other = _client_for(django_user_model.objects.create_user(username="bob", password="a-long-test-password-3"))
    assert other.post("/api/tests/", payload, format="json").status_code == 201


@override_settings(ARENA_TEST_RATE_PER_MINUTE=50, ARENA_TEST_DAILY_BUDGET=1)
def test_the_daily_budget_refuses_until_the_next_day(problems, api_client, redis_conn):
    payload = {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()}
    assert api_client.post("/api/tests/", payload, format="json").status_code == 201
    refused = api_client.post("/api/tests/", payload, format="json")
    assert refused.status_code == 429 and refused["X-RateLimit-Remaining"] == "0"
    assert 60 < int(refused["Retry-After"]) <= 86400


def test_arena_test_through_a_portal_queues_an_unranked_test(problems, user, live_server, redis_conn, run_worker):
    token = Token.objects.create(user=user).key
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "test",
            "--problem",
            ALL_REDUCE,
            "--solution",
            str(CORRECT),
            "--portal",
            live_server.url,
            "--token",
            token,
            "--no-follow",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert created["ranked"] is False and created["state"] == "queued"
    assert models.TestRun.objects.get().pk == created["id"] and Submission.objects.count() == 0


def test_arena_test_here_names_the_line_of_a_syntax_error():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "test",
            "--problem",
            ALL_REDUCE,
            "--solution",
            str(ROOT / "tests/evaluator/solutions/syntax_error.py"),
            "--json",
            "--local",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verdict"] in ("compile_error", "rejected") and doc["test"]["ranked"] is False
    assert any(d["file"] == "syntax_error.py" and d["line"] == 3 for d in doc["diagnostics"]), doc
