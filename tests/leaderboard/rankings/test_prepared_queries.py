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
