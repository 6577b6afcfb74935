"""One FilterSet (rankings.filters.RunFilterSet) serves the ranking page's form and the ranking API: both offer the
values some run has; the page ignores a value it does not offer, the API refuses it naming the field."""

from __future__ import annotations

import pytest

from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import run_tables


@pytest.fixture
def runs(user):
    common = dict(user=user, provider="Lab", turn_budget=0, tokens=1, wall_time_s=1.0)
    made = [
        ModelRun.objects.create(model="alpha", mode="zero-shot", k=1, profile="cpu-gloo-2", precision="bf16", **common),
        ModelRun.objects.create(model="beta", mode="zero-shot", k=3, profile="cpu-gloo-4", precision="fp32", **common),
    ]
    for run in made:  # finished and complete: both in the overall ranking
        RunScore.objects.create(model_run=run, k=run.k, status="ranked", timed=False)
    return made


def test_page_and_api_filter_the_same_runs(client, runs):
    page = client.get("/runs/?profile=cpu-gloo-2&format=json").json()
    api = client.get("/api/rankings/model-runs/?profile=cpu-gloo-2").json()
    assert [r["model"] for r in page["rows"]] == [r["model"] for r in api["results"]] == ["alpha"]
    assert page["filters"] == {"profile": "cpu-gloo-2"}
    assert client.get("/api/rankings/model-runs/?k=3&precision=fp32").json()["count"] == 1


def test_the_page_offers_only_values_some_run_has_and_ignores_others(client, runs):
    html = client.get("/runs/").content.decode()
    assert 'value="cpu-gloo-4"' in html and 'value="h200-nvlink-8"' not in html
    stale = client.get("/runs/?profile=h200-nvlink-8&format=json").json()
    assert len(stale["rows"]) == 2 and stale["filters"] == {}


def test_the_api_refuses_a_value_no_run_has_naming_the_field(client, runs):
    response = client.get("/api/rankings/model-runs/?profile=h200-nvlink-8")
    assert response.status_code == 400
    assert "h200-nvlink-8" in response.json()["errors"]["profile"][0]


def test_the_api_sorts_by_the_runs_tables_keys(client, runs):
    assert "-tokens" in run_tables.run_ranking_table().sort_keys()
    names = [r["model"] for r in client.get("/api/rankings/model-runs/?sort=-k").json()["results"]]
    assert names == ["beta", "alpha"]
    assert client.get("/api/rankings/model-runs/?sort=nonsense").status_code == 400


def test_forms_of_one_class_share_no_state_between_requests(client, runs):
    """The filter form's fields are shared by every form of its class (not copied per request): what one request
    bound, selected or refused never shows in the next one's form, page or answer."""
    from leaderboard.rankings.run_selectors import model_run_filters

    bad, good, unbound = (
        model_run_filters({"profile": "h200-nvlink-8"}),
        model_run_filters({"profile": "cpu-gloo-4"}),
        model_run_filters(),
    )
    assert type(bad.form) is type(good.form) is type(unbound.form)  # one class for the values offered
    assert not bad.form.is_valid() and "profile" in bad.form.errors
    assert good.form.is_valid() and good.form.cleaned_data["profile"] == "cpu-gloo-4"
    assert not unbound.form.errors and unbound.form["profile"].value() is None
    assert 'value="cpu-gloo-4" selected' in str(good.form["profile"])
    assert "selected" not in str(unbound.form["profile"]).replace('value="" selected', "")
    for _ in range(2):
        assert 'value="cpu-gloo-4" selected' in client.get("/runs/?profile=cpu-gloo-4").content.decode()
        page = client.get("/runs/").content.decode()
        assert 'value="cpu-gloo-4" selected' not in page and 'value="cpu-gloo-4"' in page
        assert client.get("/api/rankings/model-runs/?profile=h200-nvlink-8").status_code == 400
        assert client.get("/api/rankings/model-runs/?profile=cpu-gloo-4").json()["count"] == 1
