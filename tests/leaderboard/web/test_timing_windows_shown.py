"""A result's page says how its timed figures were taken: how many timed windows, and how many calls each held when
the calls were timed several to a window (evaluator/host/batch.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("calls", "said"), [(128, "30 timed windows of 128 calls"), (1, "30 iterations")])
def test_the_page_names_the_windows_and_their_calls(problems, user, redis_conn, client, calls, said):
    submission = submission_create(
        user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
    )
    submission.refresh_from_db()
    document = passed_document(1.2, version=submission.problem_version)
    document["problem"]["content_hash"] = submission.problem_hash
    document["timing"].update(iterations=30, calls_per_window=calls, protocol_revision=9)
    result_record(submission_id=submission.pk, document=document, job_id=submission.job_id)
    page = client.get(reverse("submission-detail", kwargs={"submission_id": submission.pk})).content.decode()
    assert said in page
