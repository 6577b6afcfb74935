"""The API's ranking of model runs writes each run as ``ModelRunOutputSerializer`` did (``web/run_output.py``): the same
fields, values and order for every run (a run read as a row or as a model instance, with and without a score, a rank
range, dates and the flags that may be empty), and the API's page says so."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import run_rows, run_selectors
from leaderboard.web.run_output import RunOutput
from leaderboard.web.serializers import ModelRunOutputSerializer

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded():
    seed_demo(runs=16, problems=6, attempts=2, users=3, seed=9, log=lambda _: None)
    runs = list(ModelRun.objects.order_by("pk"))
    ModelRun.objects.filter(pk=runs[0].pk).update(
        model="<b>&'x", open_weights=None, run_date=None, published_at=timezone.now(), finished_at=None
    )
    ModelRun.objects.filter(pk=runs[2].pk).update(open_weights=True, run_date=timezone.now().date())
    RunScore.objects.filter(model_run_id=runs[1].pk).delete()  # a run without a score row yet
    return runs


def test_a_run_is_written_as_the_serializer_wrote_it(seeded, rf):
    request = rf.get("/api/rankings/model-runs/")
    write = RunOutput(request)
    ordered = run_selectors.model_run_ranking()
    for runs in (list(ordered), run_rows.run_rows(ordered)):
        for i, run in enumerate(runs):
            run.rank_range = (i + 1, i + 3) if i % 3 else None
            expected = ModelRunOutputSerializer(run, context={"request": request}).data
            assert list(write(run).items()) == list(expected.items())
            assert json.dumps(write(run)) == json.dumps(expected)


def test_the_apis_ranking_writes_the_serializers_runs(seeded, client, rf):
    body = client.get("/api/rankings/model-runs/?page_size=5&page=2").json()
    assert len(body["results"]) == 5 and all(r["rank"] for r in body["results"])
    request = rf.get("/api/rankings/model-runs/")
    for result in body["results"]:
        run = ModelRun.objects.select_related("score", "user").get(pk=result["id"])
        run.rank_range = tuple(result["rank"])
        expected = ModelRunOutputSerializer(run, context={"request": request}).data
        assert json.loads(json.dumps(expected)) == result


@pytest.mark.parametrize("accept", ["application/json", "application/json; indent=2", "*/*"])
def test_the_apis_ranking_is_the_bytes_drfs_renderer_writes_kept_or_not(seeded, client, accept, settings):
    from rest_framework.renderers import JSONRenderer

    from leaderboard.rankings.memo import forget_all

    settings.ARENA_PAGE_CACHE = False  # every answer rendered (a cached one is the bytes of one rendered before)
    ModelRun.objects.filter(pk=seeded[3].pk).update(model="line\u2028and\u2029paragraph «é»")
    for query in ("", "?page_size=5&page=2", "?standing=unranked", "?standing=all&sort=model", "?profile=nothing"):
        for rebuilt in (True, False, False):  # records built afresh, then kept (their texts written once)
            if rebuilt:
                forget_all()
            response = client.get(f"/api/rankings/model-runs/{query}", HTTP_ACCEPT=accept)
            renderer = JSONRenderer()
            expected = renderer.render(response.data, response.accepted_media_type, response.renderer_context)
            assert response.content == expected, (query, accept)
            assert response["Content-Type"] == "application/json"
    assert "\\u2028" in client.get("/api/rankings/model-runs/?standing=all&page_size=100").content.decode()


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
def test_a_runs_dates_are_written_in_the_current_time_zone_as_the_serializer_writes_them(seeded, rf, zone):
    request = rf.get("/api/rankings/model-runs/")
    with timezone.override(zone):
        write = RunOutput(request)  # (the zone looked up once, for the request)
        for run in run_rows.run_rows(run_selectors.model_run_ranking()):
            expected = ModelRunOutputSerializer(run, context={"request": request}).data
            for field in ("created_at", "finished_at", "published_at"):
                assert write(run)[field] == expected[field]
