"""The cached ranking pages (leaderboard/cache.py): served from Redis with no SQL, never older than the last write,
never holding what one user may see and another may not."""

from __future__ import annotations

import pytest
from django.test import override_settings

from leaderboard import cache, services
from leaderboard.models import ModelRun, Problem
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

PAGE = f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2"


@pytest.fixture
def submit(problems):
    def make(user, *, profile="cpu-gloo-2"):
        return services.submission_create(user=user, problem=ALL_REDUCE, profile=profile, filename="s.py",
                                          source=CORRECT.read_text())

    return make


def test_a_second_read_is_a_cache_hit_with_no_query(problems, client, django_assert_num_queries):
    for path in (PAGE, "/runs/", "/runs/?format=csv", f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2",
                 "/api/rankings/model-runs/"):
        first = client.get(path)
        assert first.status_code == 200 and first[cache.HEADER] == "miss", path
        with django_assert_num_queries(0):
            second = client.get(path)
        assert second[cache.HEADER] == "hit", path
        assert second.content == first.content and second["Content-Type"] == first["Content-Type"]
        assert "Content-Security-Policy" in second  # the middleware still runs around a cached page


def test_the_key_is_the_whole_url(problems, client):
    client.get("/runs/?sort=-fast_2")
    assert client.get("/runs/?sort=-fast_2")[cache.HEADER] == "hit"
    assert client.get("/runs/?sort=fast_2")[cache.HEADER] == "miss"
    assert client.get("/runs/?sort=-fast_2", HTTP_HOST="localhost")[cache.HEADER] == "miss"  # absolute links


def test_a_cached_page_shows_a_verdict_as_soon_as_result_record_lands(submit, client, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    submission = submit(ada)
    api = f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2"
    assert "1.800×" not in client.get(PAGE).content.decode()
    assert client.get(api).json()["entries"] == []
    assert client.get(PAGE)[cache.HEADER] == "hit"

    services.result_record(submission_id=submission.pk, document=passed_document(1.8))

    page = client.get(PAGE)
    assert page[cache.HEADER] == "miss" and "1.800×" in page.content.decode()
    assert client.get(api).json()["entries"][0]["speedup"] == 1.8
    assert client.get(f"/users/ada/")[cache.HEADER] == "miss"


def test_the_generation_moves_again_when_the_write_commits(submit, django_user_model,
                                                           django_capture_on_commit_callbacks):
    """The increment that correctness rests on is the one after the commit: a reader between the first increment
    and the commit may have cached the old rows under the new generation."""
    submission = submit(django_user_model.objects.create_user("ada"))
    before = cache.generation()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.result_record(submission_id=submission.pk, document=passed_document(1.8))
    during = cache.generation()
    assert during > before
    assert cache._bump in callbacks
    for callback in callbacks:
        callback()
    assert cache.generation() > during


def test_cancelling_and_run_scores_and_problem_sync_invalidate(submit, client, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    submission = submit(ada)
    client.get("/runs/")
    services.submission_cancel(submission_id=submission.pk, user=ada)
    assert client.get("/runs/")[cache.HEADER] == "miss"

    client.get("/runs/")
    run = ModelRun.objects.create(user=ada, model="m", provider="p", mode="zero-shot", k=1, profile="cpu-gloo-2")
    services.run_score_refresh(model_run_id=run.pk)
    page = client.get("/runs/")
    assert page[cache.HEADER] == "miss" and f"/runs/{run.pk}/" in page.content.decode()

    client.get("/")
    Problem.objects.filter(pk=ALL_REDUCE).update(title="changed behind the registry's back")
    services.problems_sync()  # puts the registry's title back
    assert client.get("/")[cache.HEADER] == "miss"


def test_a_signed_in_reader_never_gets_or_leaves_a_page_with_a_name_in_it(problems, client, web_client, user):
    signed_in = web_client.get("/runs/")
    assert user.username in signed_in.content.decode() and signed_in[cache.HEADER] == "miss"
    assert web_client.get("/runs/")[cache.HEADER] == "miss"  # not stored for anyone
    from django.test import Client

    anonymous = Client()
    assert anonymous.get("/runs/")[cache.HEADER] == "miss"
    assert anonymous.get("/runs/")[cache.HEADER] == "hit"
    again = web_client.get("/runs/")  # the anonymous copy has no name in its header: not for this reader
    assert again[cache.HEADER] == "miss" and user.username in again.content.decode()
    # exports and the API are the same for everyone: shared
    anonymous.get("/runs/?format=json")
    assert web_client.get("/runs/?format=json")[cache.HEADER] == "hit"


def test_private_pages_are_never_cached(submit, web_client, user, api_client):
    submission = submit(user)
    for path in (f"/submissions/{submission.pk}/", "/submissions/", "/accounts/token/", "/submit/",
                 f"/api/submissions/{submission.pk}/"):
        for _ in range(2):
            response = web_client.get(path)
            assert response.status_code == 200 and cache.HEADER not in response, path
    owner = api_client.get(f"/api/submissions/{submission.pk}/").json()
    assert owner["source"]  # the author's own view, with the source: rendered every time
    # a request with a token is never answered from the cache, so a bad token still gets its 401
    from rest_framework.test import APIClient

    web_client.get("/api/rankings/model-runs/")
    assert cache.HEADER not in api_client.get("/api/rankings/model-runs/")
    bad = APIClient().get("/api/rankings/model-runs/", HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.status_code == 401


def test_pages_render_without_redis(problems, client):
    pages = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0",
             "OPTIONS": {"serializer": "leaderboard.cache.PageSerializer", "socket_connect_timeout": 0.2}}
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
                                   "pages": pages}):
        response = client.get("/runs/")
        assert response.status_code == 200 and cache.HEADER not in response
        cache.rankings_changed()  # a write while Redis is down is logged, not an error for the writer
