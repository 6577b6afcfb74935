"""Published solutions: private until the owner publishes; then readable and downloadable by everyone with the
result beside it; rankings filtered to published entries; a model run publishes its attempts and trajectories."""

from __future__ import annotations

import pytest

from leaderboard.models import ModelRun, Problem, Submission
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

GPU = "h200-nvlink-2"


@pytest.fixture
def solution(problems, user):
    version = Problem.objects.get(pk=ALL_REDUCE).version
    submission = submission_create(
        user=user,
        problem=ALL_REDUCE,
        profile=GPU,
        filename="fast_ring.py",
        source=CORRECT.read_text() + "\n_SECRET_MARK = 42\n",
    )
    result_record(submission_id=submission.pk, document=passed_document(2.0, version=version))
    return submission


def test_private_until_published_then_readable_and_downloadable(solution, client, django_user_model, user):
    url, download = f"/submissions/{solution.pk}/", f"/submissions/{solution.pk}/source/"
    assert "_SECRET_MARK" not in client.get(url).content.decode()
    assert client.get(download).status_code == 404
    assert "_SECRET_MARK" not in client.get(f"/api/submissions/{solution.pk}/").content.decode()

    other = django_user_model.objects.create_user("mallory", password="a-long-test-password-2")
    client.force_login(other)
    assert client.post(f"/submissions/{solution.pk}/publish/", {"published": "1"}).status_code == 302
    solution.refresh_from_db()
    assert solution.published_at is None  # only the owner publishes

    client.force_login(user)
    page = client.get(url).content.decode()
    assert 'id="publish-form"' in page and "_SECRET_MARK" in page  # the owner sees it, with the button
    client.post(f"/submissions/{solution.pk}/publish/", {"published": "1"})
    solution.refresh_from_db()
    assert solution.published_at is not None

    client.logout()
    page = client.get(url).content.decode()
    assert "_SECRET_MARK" in page and "2.000×" in page and 'id="download-source"' in page
    got = client.get(download)
    assert got.status_code == 200 and b"_SECRET_MARK" in got.content
    assert 'filename="fast_ring.py"' in got["Content-Disposition"]
    assert "_SECRET_MARK" in client.get(f"/api/submissions/{solution.pk}/").json().get("source", "")

    problem_page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    best = problem_page.split('id="best-solutions"', 1)[1].split("</section>", 1)[0]
    assert f"/submissions/{solution.pk}/source/" in best and "read the code" in best

    client.force_login(user)
    client.post(f"/submissions/{solution.pk}/publish/", {"published": "0"})
    client.logout()
    assert "_SECRET_MARK" not in client.get(url).content.decode()
    assert client.get(download).status_code == 404


def test_problem_ranking_filtered_to_published_entries(solution, client, django_user_model):
    bob = django_user_model.objects.create_user("bob")
    version = Problem.objects.get(pk=ALL_REDUCE).version
    other = submission_create(
        user=bob, problem=ALL_REDUCE, profile=GPU, filename="s.py", source=CORRECT.read_text() + "\n_OTHER = 1\n"
    )
    result_record(submission_id=other.pk, document=passed_document(3.0, version=version))
    from leaderboard.submissions.publishing import submission_publish

    submission_publish(submission_id=solution.pk, user=solution.user)
    every = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}&format=json").json()
    published = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}&published=1&format=json").json()

    def rows(doc):
        return [r["submission_id"] for r in (doc.get("rows") or doc.get("entries") or doc.get("data"))]

    assert set(rows(every)) == {solution.pk, other.pk}
    assert rows(published) == [solution.pk]


def test_a_published_model_run_shows_its_attempts_to_everyone(client, problems, django_user_model):
    owner = django_user_model.objects.create_user("owner")
    run = ModelRun.objects.create(user=owner, model="m", mode="zero-shot", k=1, profile=GPU)
    attempt = submission_create(
        user=owner,
        problem=ALL_REDUCE,
        profile=GPU,
        filename="attempt_1.py",
        source=CORRECT.read_text() + "\n_RUN_MARK = 7\n",
    )
    Submission.objects.filter(pk=attempt.pk).update(model_run=run, attempt=1)
    assert "_RUN_MARK" not in client.get(f"/submissions/{attempt.pk}/").content.decode()
    client.force_login(owner)
    assert 'id="publish-form"' in client.get(f"/runs/{run.pk}/").content.decode()
    client.post(f"/runs/{run.pk}/publish/", {"published": "1"})
    client.logout()
    assert "_RUN_MARK" in client.get(f"/submissions/{attempt.pk}/").content.decode()
    assert client.get("/runs/?published=1&format=json").status_code == 200


def test_publish_and_unpublish_through_the_api(solution, client, django_user_model, user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def api_for(someone) -> APIClient:
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=someone)[0].key}")
        return api

    owner, other = api_for(user), api_for(django_user_model.objects.create_user("mallory"))
    path = f"/api/submissions/{solution.pk}/publish/"
    assert APIClient().post(path, {}, format="json").status_code in (401, 403)
    refused = other.post(path, {}, format="json")
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert client.get(f"/submissions/{solution.pk}/source/").status_code == 404
    published = owner.post(path, {}, format="json")
    assert published.status_code == 200 and published.json()["published_at"]
    assert "_SECRET_MARK" in client.get(f"/submissions/{solution.pk}/source/").content.decode()
    private = owner.post(path, {"published": False}, format="json")
    assert private.status_code == 200 and private.json()["published_at"] is None
    assert client.get(f"/submissions/{solution.pk}/source/").status_code == 404
    assert owner.post("/api/submissions/999999/publish/", {}, format="json").status_code == 404
    assert owner.post(path, {"published": "maybe"}, format="json").status_code == 400

    # A model run: its attempts are published with it; one attempt alone cannot be.
    run = ModelRun.objects.create(user=user, model="m", mode="zero-shot", k=1, profile=GPU)
    attempt = submission_create(
        user=user,
        problem=ALL_REDUCE,
        profile=GPU,
        filename="attempt_1.py",
        source=CORRECT.read_text() + "\n_RUN_MARK = 7\n",
    )
    Submission.objects.filter(pk=attempt.pk).update(model_run=run, attempt=1)
    alone = owner.post(f"/api/submissions/{attempt.pk}/publish/", {}, format="json")
    assert alone.status_code == 400 and "publish the run" in alone.json()["detail"]
    assert other.post(f"/api/model-runs/{run.pk}/publish/", {}, format="json").status_code == 403
    answer = owner.post(f"/api/model-runs/{run.pk}/publish/", {"published": True}, format="json")
    assert answer.status_code == 200 and answer.json()["published_at"]
    assert "_RUN_MARK" in client.get(f"/submissions/{attempt.pk}/").content.decode()
    assert (
        owner.post(f"/api/model-runs/{run.pk}/publish/", {"published": False}, format="json").json()["published_at"]
        is None
    )
    assert "_RUN_MARK" not in client.get(f"/submissions/{attempt.pk}/").content.decode()
