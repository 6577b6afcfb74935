"""An upload, through the API or the web form, ends as a verdict on its status page: stored, enqueued after
the commit, evaluated by a real RQ worker running the real evaluator, and recorded by the web queue's job."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.models import Submission
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, WRONG

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_upload_is_evaluated_by_a_worker_and_its_verdict_shown(problems, api_client, run_worker, client):
    with CORRECT.open("rb") as f:
        response = api_client.post(
            "/api/submissions/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": f}, format="multipart"
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "queued" and body["verdict"] is None
    assert response["Location"].endswith(f"/api/submissions/{body['id']}/")

    page = client.get(reverse("submission-detail", args=[body["id"]]))
    assert b'http-equiv="refresh"' in page.content and b"queued" in page.content
    assert b"position 1 of 1" in page.content and b"No worker serves this profile right now" in page.content

    run_worker("cpu-gloo-2", "web")

    submission = Submission.objects.get(pk=body["id"])
    assert submission.state == "finished", submission.result.document["message"]
    assert submission.verdict == "passed", submission.result.document["message"]
    assert submission.worker and submission.started_at and submission.finished_at
    assert submission.result.speedup and submission.result.speedup > 0
    assert submission.result.problem_version == problems.get(pk=ALL_REDUCE).version

    page = client.get(reverse("submission-detail", args=[body["id"]]))
    html = page.content.decode()
    assert 'id="verdict"' in html and ">passed<" in html
    assert 'http-equiv="refresh"' not in html
    assert 'id="timings"' in html and 'id="trials"' in html
    # A CPU profile checks the pipeline: its host times are shown, its speedup and roofline fraction are not computed.
    assert 'id="speedup-not-computed"' in html and 'id="roofline-not-computed"' in html and 'id="roofline"' not in html
    assert "timing protocol revision" in html  # which timing loop produced these figures

    detail = api_client.get(body["api_url"]).json()
    assert detail["state"] == "finished" and detail["verdict"] == "passed"
    assert detail["result"]["timing"]["speedup"] == pytest.approx(submission.result.speedup)

    ranking = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2").json()
    assert [e["submission_id"] for e in ranking["entries"]] == [body["id"]]


def test_web_form_upload_of_a_wrong_solution_ends_as_wrong_output_on_its_page(problems, web_client, run_worker):
    form = web_client.get(reverse("submission-create") + f"?problem={ALL_REDUCE}&profile=cpu-gloo-2")
    assert form.status_code == 200
    with WRONG.open("rb") as f:
        response = web_client.post(
            reverse("submission-create"), {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": f}
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    submission = Submission.objects.get()
    assert response["Location"] == reverse("submission-detail", args=[submission.pk])
    assert submission.filename == "off_on_one_rank.py" and submission.state == "queued"

    run_worker("cpu-gloo-2", "web")

    page = web_client.get(response["Location"]).content.decode()
    assert ">wrong output<" in page
    assert "Failed ranks: <strong>1</strong>" in page
    assert 'class="bad"' in page  # the failing trial rows
    assert "<h2>Source</h2>" in page and "get_world_size" in page  # the author sees the source
    submission.refresh_from_db()
    assert (submission.state, submission.verdict) == ("finished", "wrong_output")


def test_pasted_source_through_the_form_is_evaluated(problems, web_client, run_worker):
    response = web_client.post(
        reverse("submission-create"), {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()}
    )
    assert response.status_code == 302
    run_worker()
    submission = Submission.objects.get()
    assert submission.filename == "solution.py"
    assert submission.verdict == "passed", submission.result.document["message"]
