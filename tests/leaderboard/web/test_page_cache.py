"""The cached ranking pages (leaderboard/web/cache.py): served from Redis with no SQL, never older than the last write,
never holding what one user may see and another may not."""

from __future__ import annotations

import pytest
from django.test import override_settings

from leaderboard.catalogue.services import problems_sync
from leaderboard.rankings.services import run_comparison_refresh, run_score_refresh
from leaderboard.submissions.queueing import submission_row
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_cancel, submission_create, submission_mark_running
from leaderboard.rankings import generations
from leaderboard.web import cache
from leaderboard.models import ModelRun, Problem
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

# A profile that measures speed, so the pages show speedups (on CPU profiles they show verdicts only).
GPU = "h200-nvlink-2"
PAGE = f"/problems/{ALL_REDUCE}/?profile={GPU}"


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False  # a leader's re-measurement is a write of its own; these tests count the others


@pytest.fixture
def submit(problems):
    def make(user, *, profile=GPU):
        return submission_create(
            user=user, problem=ALL_REDUCE, profile=profile, filename="s.py", source=CORRECT.read_text()
        )

    return make


def test_a_second_read_is_a_cache_hit_with_no_query(problems, client, django_assert_num_queries):
    for path in (
        PAGE,
        "/runs/",
        "/runs/?format=csv",
        f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}",
        "/api/rankings/model-runs/",
    ):
        first = client.get(path)
        assert first.status_code == 200 and first[cache.HEADER] == "miss", path
        body = first.content  # sent whole, as a server sends it (an export streams: stored once it all went out)
        with django_assert_num_queries(0):
            second = client.get(path)
        assert second[cache.HEADER] == "hit", path
        assert second.content == body and second["Content-Type"] == first["Content-Type"]
        assert "Content-Security-Policy" in second  # the middleware still runs around a cached page


def test_the_key_is_the_whole_url(problems, client):
    client.get("/runs/?sort=-fast_2")
    assert client.get("/runs/?sort=-fast_2")[cache.HEADER] == "hit"
    assert client.get("/runs/?sort=fast_2")[cache.HEADER] == "miss"
    assert client.get("/runs/?sort=-fast_2", HTTP_HOST="localhost")[cache.HEADER] == "miss"  # absolute links


def test_a_cached_page_shows_a_verdict_as_soon_as_result_record_lands(submit, client, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    submission = submit(ada)
    api = f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}"
    assert "1.800×" not in client.get(PAGE).content.decode()
    assert client.get(api).json()["entries"] == []
    assert client.get(PAGE)[cache.HEADER] == "hit"

    result_record(submission_id=submission.pk, document=passed_document(1.8))

    page = client.get(PAGE)
    assert page[cache.HEADER] == "miss" and "1.800×" in page.content.decode()
    assert client.get(api).json()["entries"][0]["speedup"] == 1.8
    assert client.get("/users/ada/")[cache.HEADER] == "miss"


def test_the_generation_moves_again_when_the_write_commits(
    submit, django_user_model, django_capture_on_commit_callbacks
):
    """The increment that correctness rests on is the one after the commit: a reader between the first increment
    and the commit may have cached the old rows under the new generation."""
    submission = submit(django_user_model.objects.create_user("ada"))
    scopes = [generations.problem_scope(ALL_REDUCE), generations.user_scope("ada")]
    before = generations.generations(scopes)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result_record(submission_id=submission.pk, document=passed_document(1.8))
    during = generations.generations(scopes)
    assert during[0] == before[0] and during[1] > before[1] and during[2] > before[2]  # scoped: not the global one
    assert callbacks
    for callback in callbacks:
        callback()
    after = generations.generations(scopes)
    assert after[1] > during[1] and after[2] > during[2]


def test_cancelling_and_run_scores_and_problem_sync_invalidate(submit, client, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    submission = submit(ada)
    client.get("/users/ada/")
    submission_cancel(submission_id=submission.pk, user=ada)
    assert client.get("/users/ada/")[cache.HEADER] == "miss"

    client.get("/runs/")
    run = ModelRun.objects.create(user=ada, model="m", provider="p", mode="zero-shot", k=1, profile="cpu-gloo-2")
    run_score_refresh(model_run_id=run.pk)
    page = client.get("/runs/")
    assert page[cache.HEADER] == "miss" and f"/runs/{run.pk}/" in page.content.decode()

    client.get("/")
    Problem.objects.filter(pk=ALL_REDUCE).update(title="changed behind the registry's back")
    problems_sync()  # puts the registry's title back
    assert client.get("/")[cache.HEADER] == "miss"


def test_a_result_invalidates_the_pages_that_show_it_and_no_other(problems, client, django_user_model):
    """A solo result on one problem: its problem's pages and its author's page change; the model-run ranking, other
    problems and other users do not. An attempt of a model run: its run's pages, the ranking and the comparison too."""
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    run = ModelRun.objects.create(user=bob, model="m", provider="p", mode="zero-shot", k=1, profile=GPU)
    other = ModelRun.objects.create(user=bob, model="n", provider="p", mode="zero-shot", k=1, profile=GPU)
    # other code than ada's below, so it is a solution of its own (the same code would be pooled into one row)
    attempt = submission_row(
        user=bob,
        problem=Problem.objects.get(pk=ALL_REDUCE),
        profile=GPU,
        filename="a.py",
        text=CORRECT.read_text() + "\n_VARIANT = 'run'\n",
        model_run=run,
        attempt=1,
    )
    attempt.save()
    run_score_refresh(model_run_id=run.pk)
    other_problem = Problem.objects.exclude(pk=ALL_REDUCE).filter(is_active=True).first()
    pages = {
        "problem": PAGE,
        "problem api": f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}",
        "ada": "/users/ada/",
        "bob": "/users/bob/",
        "ranking": "/runs/",
        "ranking api": "/api/rankings/model-runs/",
        "run": f"/runs/{run.pk}/",
        "run api": f"/api/model-runs/{run.pk}/attempts/",
        "other run": f"/runs/{other.pk}/",
        "compare": f"/runs/compare/?a={run.pk}&b={other.pk}",
        "other problem": f"/problems/{other_problem.id}/",
        "home": "/",
    }
    run_comparison_refresh(a_id=run.pk, b_id=other.pk)  # the web worker's job, which the comparison asks for

    def missed() -> set[str]:
        return {name for name, path in pages.items() if client.get(path)[cache.HEADER] == "miss"}

    missed()
    assert missed() == set()

    solo = submission_create(user=ada, problem=ALL_REDUCE, profile=GPU, filename="s.py", source=CORRECT.read_text())
    result_record(submission_id=solo.pk, document=passed_document(1.8))
    # the home page shows each problem's leader, so it follows the problem's scope
    assert missed() == {"problem", "problem api", "ada", "home"}

    submission_mark_running(submission_id=attempt.pk, worker="w", started_at=None)
    assert missed() == {"problem", "problem api", "bob", "ranking", "ranking api", "run", "run api", "compare", "home"}
    result_record(submission_id=attempt.pk, document=passed_document(2.5))
    run_comparison_refresh(a_id=run.pk, b_id=other.pk)  # the run's new score: the comparison computed again
    assert missed() == {"problem", "problem api", "bob", "ranking", "ranking api", "run", "run api", "compare", "home"}
    assert "2.500×" in client.get(PAGE).content.decode()

    third = ModelRun.objects.create(user=bob, model="o", provider="p", mode="zero-shot", k=1, profile="cpu-gloo-2")
    run_score_refresh(model_run_id=third.pk)  # another run's score: not in this comparison
    assert missed() == {"bob", "ranking", "ranking api"}

    problems_sync(problems={})  # deactivates every registry problem: a global change
    assert missed() == set(pages)


def test_a_new_model_run_is_offered_by_every_comparison(problems, client, django_user_model):
    from tests.leaderboard.run_fixtures import make_run

    ada = django_user_model.objects.create_user("ada")
    a = ModelRun.objects.create(user=ada, model="m", provider="p", mode="zero-shot", k=1, profile="cpu-gloo-2")
    b = ModelRun.objects.create(user=ada, model="n", provider="p", mode="zero-shot", k=1, profile="cpu-gloo-2")
    url = f"/runs/compare/?a={a.pk}&b={b.pk}"
    run_comparison_refresh(a_id=a.pk, b_id=b.pk)  # the web worker's job, which the page asks for
    client.get(url)
    assert client.get(url)[cache.HEADER] == "hit"
    run = make_run(ada, record=False)
    page = client.get(url)
    assert page[cache.HEADER] == "miss" and f'value="{run.pk}"' in page.content.decode()


def test_a_comparison_whose_runs_cannot_be_named_for_sure_is_not_cached(problems, client):
    for query in ("a=012&b=3", "a=1.0&b=2", "a=x"):
        assert cache.HEADER not in client.get(f"/runs/compare/?{query}")
    assert client.get("/runs/compare/?a=1&b=2")[cache.HEADER] == "miss"


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
    assert anonymous.get("/runs/?format=json").content  # sent whole (an export streams: stored once it all went out)
    assert web_client.get("/runs/?format=json")[cache.HEADER] == "hit"


def test_private_pages_are_never_cached(submit, web_client, user, api_client):
    submission = submit(user)
    for path in (
        f"/submissions/{submission.pk}/",
        "/submissions/",
        "/accounts/token/",
        "/submit/",
        f"/api/submissions/{submission.pk}/",
    ):
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
    pages = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"serializer": "leaderboard.web.cache.PageSerializer", "socket_connect_timeout": 0.2},
    }
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "pages": pages}
    ):
        response = client.get("/runs/")
        assert response.status_code == 200 and cache.HEADER not in response
        generations.rankings_changed()  # a write while Redis is down is logged, not an error for the writer


def _page_key(path: str, scopes: list[str]) -> str:
    from django.test import RequestFactory

    return cache._key(RequestFactory().get(path), generations.generations(scopes))


def test_readers_that_miss_together_wait_for_one_render(problems, client, monkeypatch):
    """After a write every reader of a popular page misses at once; one renders it, the others wait for its copy."""
    import threading
    import time

    monkeypatch.setattr(cache, "WAIT_S", 5.0)
    key = _page_key("/runs/", [generations.RUNS])
    assert cache._lock(key)  # another request is rendering /runs/ for these generations

    def other_request_stores_its_page():
        time.sleep(0.3)
        generations.pages_cache().set(
            key, b'{"public":false,"headers":{"Content-Type":"text/html"}}\n\nrendered elsewhere'
        )
        cache._unlock(key)

    threading.Thread(target=other_request_stores_its_page).start()
    started = time.monotonic()
    page = client.get("/runs/")
    assert page.content == b"rendered elsewhere" and page[cache.HEADER] == "hit"
    assert time.monotonic() - started >= 0.3


def test_a_render_that_stores_nothing_does_not_hold_up_the_next_reader(problems, client, monkeypatch):
    import time

    monkeypatch.setattr(cache, "WAIT_S", 5.0)
    for _ in range(2):  # a 404 releases the page's lock
        started = time.monotonic()
        assert client.get("/runs/999999/").status_code == 404
        assert time.monotonic() - started < 2
    import threading

    key = _page_key("/runs/", [generations.RUNS])
    assert cache._lock(key)
    threading.Timer(0.2, cache._unlock, [key]).start()  # another render ends without a page to store
    started = time.monotonic()
    assert client.get("/runs/")[cache.HEADER] == "miss"
    assert 0.2 <= time.monotonic() - started < 2  # it waited for the other render, not for WAIT_S


def test_a_hit_is_sent_gzipped_to_a_reader_that_accepts_gzip_and_reads_the_same(problems, client):
    import gzip

    for path in ("/runs/", "/", "/?format=json", "/api/problems/"):
        rendered = client.get(path)
        assert rendered[cache.HEADER] == "miss" and "Accept-Encoding" in rendered["Vary"]
        body = b"".join(rendered.streaming_content) if rendered.streaming else rendered.content
        plain = client.get(path)
        assert plain[cache.HEADER] == "hit" and not plain.has_header("Content-Encoding")
        assert plain.content == body and "Accept-Encoding" in plain["Vary"]
        gzipped = client.get(path, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
        assert gzipped[cache.HEADER] == "hit" and gzipped["Content-Encoding"] == "gzip"
        assert gzip.decompress(gzipped.content) == body and len(gzipped.content) < len(body)
        assert gzipped["Content-Type"] == rendered["Content-Type"]
    tiny = client.get("/api/rankings/model-runs/", HTTP_ACCEPT_ENCODING="gzip")  # no run: 93 bytes, kept as they are
    assert tiny[cache.HEADER] == "miss" and len(tiny.content) < 100
    again = client.get("/api/rankings/model-runs/", HTTP_ACCEPT_ENCODING="gzip")
    assert again[cache.HEADER] == "hit" and again.content == tiny.content and not again.has_header("Content-Encoding")


def test_a_page_stored_before_pages_were_kept_gzipped_is_still_served(problems, client):
    key = _page_key("/runs/", [generations.RUNS])
    generations.pages_cache().set(key, b'{"public":true,"headers":{"Content-Type":"text/html"}}\n\nstored earlier')
    for encoding in ("", "gzip"):
        page = client.get("/runs/", HTTP_ACCEPT_ENCODING=encoding)
        assert page.content == b"stored earlier" and page[cache.HEADER] == "hit"
        assert not page.has_header("Content-Encoding")


def test_a_hit_is_one_round_trip_to_redis(problems, client, django_user_model, monkeypatch):
    """A cached page's generations and the page stored under them come back in one command, for pages of one to four
    generations (the comparison: the global one, the list of runs and both runs); a write still makes the next read a
    miss, and a generation Redis lost starts afresh."""
    import redis

    ada = django_user_model.objects.create_user("ada")
    a, b = (ModelRun.objects.create(user=ada, model=m, provider="p", mode="zero-shot", k=1, profile=GPU) for m in "mn")
    run_comparison_refresh(a_id=a.pk, b_id=b.pk)  # the web worker's job, which the comparison asks for
    commands: list[str] = []
    execute = redis.Redis.execute_command

    def counted(self, *args, **options):
        commands.append(str(args[0]))
        return execute(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counted)
    for path in (PAGE, "/runs/", "/runs/?format=csv", "/", f"/runs/compare/?a={a.pk}&b={b.pk}", "/users/ada/"):
        first = client.get(path)
        assert first[cache.HEADER] == "miss", path
        body = first.content  # (an export is stored once it went out whole)
        commands.clear()
        second = client.get(path)
        assert second[cache.HEADER] == "hit" and second.content == body, path
        assert len(commands) == 1, (path, commands)

    generations.rankings_changed(generations.RUNS)
    assert client.get("/runs/")[cache.HEADER] == "miss"
    assert client.get("/runs/")[cache.HEADER] == "hit"
    generations.pages_cache().delete(generations.generation_keys([generations.RUNS])[1])  # Redis lost it
    assert client.get("/runs/")[cache.HEADER] == "miss"
    assert client.get("/runs/")[cache.HEADER] == "hit"


def test_pages_render_without_redis_through_the_one_round_trip_read(problems, client):
    pages = {
        "BACKEND": "leaderboard.web.cache.KeptClientRedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"serializer": "leaderboard.web.cache.PageSerializer", "socket_connect_timeout": 0.2},
    }
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "pages": pages}
    ):
        for path in ("/runs/", PAGE):
            response = client.get(path)
            assert response.status_code == 200 and cache.HEADER not in response
