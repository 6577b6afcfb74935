"""Quotas that hold under concurrency and the hourly evaluation budget: many submissions fired at once by one user
(threads, each with its own database connection) get exactly the pending limit accepted; a model run with more
attempts than the hourly budget is refused with a message that says so; uploads are throttled per user (429 with
Retry-After: JSON for the API, a page for the form)."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun, Submission
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

GOOD = CORRECT.read_text()
PAYLOAD = {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD}


def _rates(**rates):
    return override_settings(
        REST_FRAMEWORK={
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
        }
    )


@pytest.mark.parametrize("limit, fired", [(5, 24)])
def test_concurrent_submissions_get_exactly_the_pending_limit(user, problems, redis_conn, limit, fired):
    key = Token.objects.create(user=user).key
    statuses: list[int] = []
    barrier = threading.Barrier(fired)

    def submit() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        barrier.wait()
        try:
            statuses.append(client.post("/api/submissions/", PAYLOAD, format="json").status_code)
        finally:
            connection.close()

    with override_settings(ARENA_MAX_PENDING_PER_USER=limit), _rates(uploads="1000/min"):
        threads = [threading.Thread(target=submit) for _ in range(fired)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert sorted(statuses) == [201] * limit + [400] * (fired - limit), statuses
    assert Submission.objects.filter(user=user).count() == limit
    assert connection.vendor in ("postgresql", "sqlite")


def test_a_model_run_over_the_hourly_budget_is_refused_with_a_clear_message(api_client, problems, redis_conn):
    attempts = {(ALL_REDUCE, i): GOOD for i in range(1, 13)}
    archive = build_archive(dict(fx.MANIFEST, k=12, hardware="cpu-gloo-2"), attempts)
    with override_settings(ARENA_EVALUATIONS_PER_HOUR=10):
        response = api_client.post(
            "/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", archive)}, format="multipart"
        )
        assert response.status_code == 400, response.content
        detail = response.json()["detail"]
        assert "This model run has 12 evaluations; you may start 10 an hour and have 10 left" in detail
        assert not ModelRun.objects.exists() and not Submission.objects.exists()
        for _ in range(10):  # single submissions count against the same budget
            with override_settings(ARENA_MAX_PENDING_PER_USER=100):
                assert api_client.post("/api/submissions/", PAYLOAD, format="json").status_code == 201
        response = api_client.post("/api/submissions/", PAYLOAD, format="json")
        assert response.status_code == 400 and "you may start 10 an hour and have 0 left" in response.json()["detail"]


def test_uploads_are_throttled_per_user_json_for_the_api_a_page_for_the_form(
    api_client, web_client, problems, redis_conn
):
    with _rates(uploads="3/hour"):
        for _ in range(3):
            assert api_client.post("/api/submissions/", PAYLOAD, format="json").status_code == 201
        response = api_client.post("/api/submissions/", PAYLOAD, format="json")
        assert response.status_code == 429 and int(response["Retry-After"]) > 60
        assert "throttled" in response.json()["detail"]
        page = web_client.post("/submit/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD})
        assert page.status_code == 429 and int(page["Retry-After"]) > 60
        assert "Too many uploads" in page.content.decode()
        assert web_client.get("/submit/").status_code == 200  # reading the form is not limited
    assert Submission.objects.count() == 3
