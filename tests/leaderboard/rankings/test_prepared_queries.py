"""The ranking's queries are compiled once per process for each state of the filters, sort and page
(``rankings/prepared.py``): one request after another in the same process, each state still lists its own runs, in
its own order, on the page and in its exports."""

from __future__ import annotations

import re

import pytest

from leaderboard.models import ModelRun, RunScore


def _run(user, model: str, profile: str, k: int, pass_at_k: float, status: str = "ranked") -> ModelRun:
    run = ModelRun.objects.create(
        model=model, mode="zero-shot", k=k, profile=profile, provider="Lab", turn_budget=0, tokens=k, wall_time_s=1.0,
        user=user,
    )  # fmt: skip
    RunScore.objects.create(model_run=run, k=k, status=status, timed=False, pass_at_k=pass_at_k)
    return run


@pytest.fixture(autouse=True)
def rendered_every_time(settings):
    settings.ARENA_PAGE_CACHE = False  # each request renders its page (and runs its queries)


@pytest.fixture
def runs(user):
    return [
        _run(user, "alpha", "cpu-gloo-2", 1, 0.9),
        _run(user, "beta", "cpu-gloo-4", 3, 0.5),
        _run(user, "gamma", "cpu-gloo-2", 3, 0.7),
        _run(user, "delta", "cpu-gloo-4", 1, 0.2, status="partial"),
    ]


def _models(client, query: str) -> list[str]:
    return [row["model"] for row in client.get(f"/runs/?{query}&format=json").json()["rows"]]


def _page_models(client, query: str, table: str = "run-ranking") -> list[str]:
    html = client.get(f"/runs/?{query}").content.decode()
    if f'id="{table}"' not in html:  # (a table with no row is not shown)
        return []
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'/runs/\d+/">([a-z]+)</a>', body)


def test_each_filter_sort_and_page_lists_its_own_runs_one_request_after_another(client, runs):
    for _ in range(2):  # the second time round, every query is one compiled before
        assert _models(client, "profile=cpu-gloo-2") == ["alpha", "gamma"]
        assert _models(client, "profile=cpu-gloo-4") == ["beta"]
        assert _models(client, "profile=cpu-gloo-2&sort=k") == ["alpha", "gamma"]
        assert _models(client, "sort=-k") == ["gamma", "beta", "alpha"]
        assert _models(client, "sort=model") == ["alpha", "beta", "gamma"]
        assert _models(client, "per_page=1&page=1") == ["alpha"]
        assert _models(client, "per_page=1&page=2") == ["gamma"]
        assert _page_models(client, "per_page=2&page=2") == ["beta"]
        assert _models(client, "profile=h200-nvlink-8") == ["alpha", "gamma", "beta"]  # not offered: ignored
        assert _page_models(client, "k=3") == ["gamma", "beta"]
        assert _page_models(client, "k=1") == ["alpha"]
        assert _page_models(client, "k=1", table="run-unranked") == ["delta"]
        assert _page_models(client, "profile=cpu-gloo-2", table="run-unranked") == []
        csv = client.get("/runs/?k=3&format=csv").content.decode()
        assert [line.split(",")[2] for line in csv.splitlines()[1:]] == ["gamma", "beta"]


def test_a_value_offered_once_a_run_has_it_filters_from_then_on(client, user, runs):
    assert _models(client, "profile=h200-nvlink-8") == ["alpha", "gamma", "beta"]  # no run has it: ignored
    _run(user, "epsilon", "h200-nvlink-8", 1, 0.3)
    assert _models(client, "profile=h200-nvlink-8") == ["epsilon"]
    assert _page_models(client, "profile=h200-nvlink-8") == ["epsilon"]


def _api_models(client, query: str) -> list[str]:
    return [row["model"] for row in client.get(f"/api/rankings/model-runs/?{query}").json()["results"]]


def test_the_api_lists_each_states_own_runs_one_request_after_another(client, runs):
    for _ in range(2):
        assert _api_models(client, "profile=cpu-gloo-2") == ["alpha", "gamma"]
        assert _api_models(client, "profile=cpu-gloo-4") == ["beta"]
        assert _api_models(client, "sort=-k") == ["gamma", "beta", "alpha"]
        assert _api_models(client, "page_size=1&page=2") == ["gamma"]
        assert _api_models(client, "") == ["alpha", "gamma", "beta"]
        assert _api_models(client, "standing=unranked") == ["delta"]
        assert _api_models(client, "page_size=1") == ["alpha"]
        assert _api_models(client, "standing=unranked&page_size=1") == ["delta"]
        assert _api_models(client, "standing=all&k=1") == ["alpha", "delta"]


# --- a page's fixed reads (``prepared.rows``, ``prepared.get``): compiled once per key, the rows read every time ---


def test_a_read_compiled_once_reads_the_rows_as_they_stand_each_key_its_own(runs):
    from leaderboard.rankings import prepared

    built = []

    def of(model: str):
        def build():
            built.append(model)
            return ModelRun.objects.filter(model=model).values_list("model", "k", "created_at")

        return build

    expected = list(ModelRun.objects.filter(model="alpha").values_list("model", "k", "created_at"))
    assert prepared.rows(("test-runs", "alpha"), of("alpha")) == expected
    ModelRun.objects.filter(model="alpha").update(k=7)
    assert [k for _, k, _ in prepared.rows(("test-runs", "alpha"), of("alpha"))] == [7]  # read anew, not kept
    assert [m for m, _, _ in prepared.rows(("test-runs", "beta"), of("beta"))] == ["beta"]
    assert built == ["alpha", "beta"]  # each key's query built once
    assert prepared.rows(None, of("gamma")) == list(of("gamma")()) and built.count("gamma") == 2  # None: every time
    assert prepared.rows(("test-runs", "none"), lambda: ModelRun.objects.none().values_list("pk")) == []


def test_a_read_applies_the_converters_its_queryset_would(problems):
    from leaderboard.models import Problem
    from leaderboard.rankings import prepared

    wanted = lambda: Problem.objects.order_by("pk").values_list("pk", "world_sizes", "presets", "updated_at")  # noqa: E731
    assert prepared.rows(("test-problems",), wanted) == list(wanted())
    assert prepared.first(("test-first",), wanted) == wanted().first()
    assert prepared.first(("test-no-first",), lambda: Problem.objects.filter(pk="x/y").values_list("pk")) is None


def test_get_reads_the_instance_a_queryset_gets(problems, user, django_user_model):
    from leaderboard.models import Problem
    from leaderboard.rankings import prepared

    problem = Problem.objects.order_by("pk").first()
    got = prepared.get(Problem, pk=problem.pk)
    assert type(got) is Problem and not got._state.adding and got._state.db == "default"
    assert {f.attname: getattr(got, f.attname) for f in Problem._meta.concrete_fields} == {
        f.attname: getattr(problem, f.attname) for f in Problem._meta.concrete_fields
    }
    assert prepared.get(Problem, pk="no/such") is None
    assert prepared.get(django_user_model, username="ada").pk == user.pk
    django_user_model.objects.create_user(username="bea", password="a-long-test-password-2", email="same@x.org")
    django_user_model.objects.filter(pk=user.pk).update(email="same@x.org")
    with pytest.raises(django_user_model.MultipleObjectsReturned):
        prepared.get(django_user_model, email="same@x.org")


def test_a_missing_problem_or_user_is_still_the_same_404(client, problems):
    assert client.get("/problems/no/such/").status_code == 404
    assert client.get("/users/nobody/").status_code == 404
    for url in ("/api/problems/no/such/ranking/", "/api/users/nobody/"):
        response = client.get(url)
        assert response.status_code == 404
    assert "No Problem matches the given query." in client.get("/api/problems/no/such/ranking/").content.decode()


def _fields(instance) -> dict:
    """An instance's loaded fields (a deferred one left out) and which are deferred."""
    loaded = {
        f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields if f.attname in vars(instance)
    }
    return {"loaded": loaded, "deferred": instance.get_deferred_fields()}


def test_a_run_its_owner_and_score_read_once_compiled_are_what_select_related_reads(client, user, runs):
    """``model_run_detail`` and ``model_run_pair`` (their queries compiled once per run and pair) give the instances
    ``select_related("user", "score")`` gives: every field, the owner and the score cached, no score on a run without
    one, the pair's big JSON left deferred; the rows as they stand after a change, and the same 404."""
    from django.http import Http404

    from leaderboard.rankings import run_selectors

    bare = ModelRun.objects.create(model="bare", mode="zero-shot", k=1, profile="cpu-gloo-2", provider="Lab", user=user)
    related = ModelRun.objects.select_related("user", "score")
    for _ in range(2):  # the second time round, every query is one compiled before
        for run in [*runs, bare]:
            got, want = run_selectors.model_run_detail(run_id=run.pk), related.get(pk=run.pk)
            assert _fields(got) == _fields(want) and _fields(got.user) == _fields(want.user)
            assert hasattr(got, "score") == hasattr(want, "score") == (run is not bare)
            if run is not bare:
                assert _fields(got.score) == _fields(want.score) and got.score.model_run is got
            with_big_json_deferred = related.defer("score__by_category", "score__detail")
            a, b = run_selectors.model_run_pair(a_id=run.pk, b_id=runs[0].pk)
            assert _fields(a) == _fields(with_big_json_deferred.get(pk=run.pk))
            assert _fields(b) == _fields(with_big_json_deferred.get(pk=runs[0].pk))
            if run is not bare:
                assert _fields(a.score) == _fields(with_big_json_deferred.get(pk=run.pk).score)
                assert a.score.get_deferred_fields() == {"by_category", "detail"}
        RunScore.objects.filter(model_run=runs[1]).update(pass_at_k=0.25, detail={"seen": True})
        user.username = "renamed"
        user.save()
    assert run_selectors.model_run_detail(run_id=runs[1].pk).score.detail == {"seen": True}
    assert run_selectors.model_run_detail(run_id=runs[1].pk).user.username == "renamed"
    attempts = run_selectors.model_run_attempts(run=runs[0])
    assert attempts == [] and client.get(f"/runs/{runs[0].pk}/").status_code == 200
    for missing in (
        lambda: run_selectors.model_run_detail(run_id=10**9),
        lambda: run_selectors.model_run_pair(a_id=runs[0].pk, b_id=10**9),
    ):
        with pytest.raises(Http404, match="No ModelRun matches the given query."):
            missing()
    assert client.get(f"/runs/{10**9}/").status_code == 404


def test_a_users_best_solutions_read_once_compiled_are_the_querysets_rows_as_they_stand(client, django_user_model):
    """``user_best_solutions`` (its window query built and compiled once per user) reads what its queryset reads, for
    each user, after another solution lands and on the page; a user with none reads none."""
    from leaderboard.management.commands.seed_demo import seed_demo
    from leaderboard.models import Result
    from leaderboard.rankings import user_solutions as selectors

    seed_demo(runs=4, problems=6, attempts=2, users=3, seed=5, log=lambda _: None)
    users = list(django_user_model.objects.filter(username__startswith="demo-user-").order_by("username"))
    nobody = django_user_model.objects.create_user("nobody")
    for _ in range(2):  # the second time round, every query is one compiled before
        for person in [*users, nobody]:
            want = [selectors.BestSolution(*row) for row in selectors._best_solutions_query(person.pk)]
            assert selectors.user_best_solutions(user=person) == want
        assert selectors.user_best_solutions(user=nobody) == []
        best = selectors.user_best_solutions(user=users[0])[0]
        Result.objects.filter(submission_id=best.submission_id).update(speedup=(best.speedup or 1) + 100)
    assert selectors.user_best_solutions(user=users[0])[0].speedup == best.speedup + 100
    assert f"{best.speedup + 100:.3f}×" in client.get(f"/users/{users[0].username}/").content.decode()
