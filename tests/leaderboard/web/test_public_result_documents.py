"""A private solution's result document, as a visitor reads it on the submission's page and through the API: no
exception text, traceback or logs, a shortened source hash; its author and staff still read everything."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "ZeroDivisionError: secret_tuning_constant_4711 / 0"  # what the private source's exception says


def _failed_document(submission) -> dict:
    return {
        "schema_version": 1,
        "verdict": "runtime_error",
        "message": f"rank 1 raised {SECRET}",
        "failed_ranks": [1],
        "problem": {"id": ALL_REDUCE, "version": submission.problem_version},
        "solution": {"name": "s.py", "sha256": submission.sha256},
        "profile": {"name": "cpu-gloo-2"},
        "trials": [
            {"trial": 0, "ranks": [{"rank": 0, "ok": True, "error": None}, {"rank": 1, "ok": False, "error": SECRET}]}
        ],
        "timing": None,
        "roofline": None,
        "flags": {},
        "environment": {"torch": "2.x"},
        "phases": {"setup": 0.5},
        "timeline": {},
        "logs": {"rank1": f"Traceback ...\n  secret_tuning_constant_4711 = 0\n{SECRET}"},
        "traceback": f'Traceback (most recent call last):\n  File "s.py", line 3\n{SECRET}',
        # the shape test mode writes (evaluator/contract/testmode.diagnostics); from_json refuses any other
        "diagnostics": [{"file": "s.py", "line": 3, "kind": "traceback", "text": SECRET}],
    }


@pytest.fixture
def failed(problems, user, redis_conn):
    submission = submission_create(
        user=user,
        problem=ALL_REDUCE,
        profile="cpu-gloo-2",
        filename="s.py",
        source=CORRECT.read_text() + "\nsecret_tuning_constant_4711 = 0\n",
    )
    submission.refresh_from_db()
    result_record(submission_id=submission.pk, document=_failed_document(submission), job_id=submission.job_id)
    submission.refresh_from_db()
    assert submission.verdict == "runtime_error"
    return submission


def _api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_a_visitor_reads_only_what_a_visitor_may_see_through_the_api_and_the_page(failed, client, django_user_model):
    stranger = django_user_model.objects.create_user(username="eve", password="a-long-test-password-2")
    url = f"/api/submissions/{failed.pk}/"
    for reader in (_api(), _api(stranger)):  # anonymous, and another signed-in user
        body = reader.get(url).json()
        text = json.dumps(body)
        assert "secret_tuning_constant_4711" not in text and "ZeroDivisionError" not in text
        assert failed.sha256 not in text
        assert body["sha256"] == failed.sha256[:12] and body["result"]["solution"]["sha256"] == failed.sha256[:12]
        result = body["result"]
        assert not {"logs", "traceback", "diagnostics"} & set(result)
        assert result["verdict"] == "runtime_error" and result["failed_ranks"] == [1]
        assert result["message"] == body["message"] == "The solution raised an error while it ran."
        assert result["trials"] == [{"trial": 0, "ranks": [{"rank": 0, "ok": True}, {"rank": 1, "ok": False}]}]
        assert result["environment"] == {"torch": "2.x"} and result["phases"] == {"setup": 0.5}
        assert body["source"] is None

    page = client.get(reverse("submission-detail", kwargs={"submission_id": failed.pk})).content.decode()
    assert "runtime_error" in page and "The solution raised an error while it ran." in page
    assert "secret_tuning_constant_4711" not in page and "ZeroDivisionError" not in page
    assert failed.sha256 not in page and failed.sha256[:12] in page


def test_its_author_and_staff_still_read_everything(failed, user, client, django_user_model):
    staff = django_user_model.objects.create_user(username="op", password="a-long-test-password-3", is_staff=True)
    for reader in (user, staff):
        body = _api(reader).get(f"/api/submissions/{failed.pk}/").json()
        assert body["sha256"] == failed.sha256 and body["result"]["solution"]["sha256"] == failed.sha256
        assert SECRET in body["result"]["traceback"] and SECRET in body["result"]["logs"]["rank1"]
        assert SECRET in body["message"] and body["result"]["trials"][0]["ranks"][1]["error"] == SECRET
        assert body["result"]["diagnostics"] == [{"file": "s.py", "line": 3, "kind": "traceback", "text": SECRET}]

        client.force_login(reader)
        page = client.get(reverse("submission-detail", kwargs={"submission_id": failed.pk})).content.decode()
        assert "secret_tuning_constant_4711" in page and failed.sha256 in page
        client.logout()
