"""A CPU profile's timings only check the pipeline: the pages say its speedups are "not computed", and every export
and API answer says the same, a null speedup and roofline fraction with a note saying why, where a GPU profile's
figures are carried as measured."""

from __future__ import annotations

import json

import pytest

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.datasets import export as datasets
from leaderboard.models import Problem
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db
GPU4, CPU = "h200-nvlink-4", "cpu-gloo-4"


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _record(user, profile, speedup):
    problem = Problem.objects.get(pk=ALL_REDUCE)
    submission = submission_create(
        user=user,
        problem=ALL_REDUCE,
        profile=profile,
        filename="s.py",
        source=CORRECT.read_text() + f"\n_ON = {profile!r}\n",
    )
    document = passed_document(speedup, version=problem.version, problem_id=ALL_REDUCE)
    document["timing"]["protocol_revision"] = TIMING_PROTOCOL_REVISION
    result_record(submission_id=submission.pk, document=document)
    return submission


def _json(client, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, url
    return json.loads(b"".join(response.streaming_content) if response.streaming else response.content)


def _not_computed(row: dict, *fields: str) -> None:
    assert all(row[f] is None for f in fields), row
    assert row["speedup_note"].startswith("not computed"), row


def test_exports_and_the_api_carry_no_cpu_speedup_and_say_why(client, problems, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    cpu_solution, gpu_solution = _record(ada, CPU, 9.0), _record(ada, GPU4, 2.0)
    cpu_run = fx.make_run(ada, manifest={**fx.MANIFEST, "hardware": "cpu-gloo-2", "model": "cpu-coder"})
    gpu_run = fx.make_run(ada)

    solutions = {r["profile"]: r for r in _json(client, "/users/ada/?format=json&table=solutions")["rows"]}
    _not_computed(solutions[CPU], "speedup", "roofline_fraction")
    assert solutions[GPU4]["speedup"] == pytest.approx(2.0) and solutions[GPU4]["speedup_note"] is None

    cpu_attempts = _json(client, f"/runs/{cpu_run.pk}/?format=json&table=attempts")
    assert cpu_attempts["speedup_note"].startswith("not computed") and cpu_attempts["rows"]
    for row in cpu_attempts["rows"]:
        _not_computed(row, "speedup", "roofline_fraction")
    gpu_attempts = _json(client, f"/runs/{gpu_run.pk}/?format=json&table=attempts")
    assert gpu_attempts["speedup_note"] is None
    assert any(r["speedup"] for r in gpu_attempts["rows"]) and all(
        r["speedup_note"] is None for r in gpu_attempts["rows"]
    )

    runs = {
        r["model"]: r
        for table in ("runs", "unranked")
        for r in _json(client, f"/runs/?format=json&table={table}")["rows"]
    }
    _not_computed(runs["cpu-coder"], "speedup", "roofline", "fast_1")
    assert runs[fx.MANIFEST["model"]]["speedup"] and runs[fx.MANIFEST["model"]]["speedup_note"] is None

    for row in client.get(f"/api/model-runs/{cpu_run.pk}/attempts/").json()["attempts"]:
        _not_computed(row, "speedup", "roofline_fraction")
    assert any(r["speedup"] for r in client.get(f"/api/model-runs/{gpu_run.pk}/attempts/").json()["attempts"])

    ranking = _json(client, f"/problems/{ALL_REDUCE}/?profile={CPU}&format=json")["rows"]
    assert ranking
    for row in ranking:
        _not_computed(row, "speedup", "speedup_ci_low", "roofline_fraction")
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile={CPU}").json()["entries"]
    _not_computed(api[0], "speedup", "roofline_fraction")

    client.force_login(ada)
    mine = {r["id"]: r for r in client.get("/api/submissions/").json()["results"]}
    _not_computed(mine[cpu_solution.pk], "speedup")
    assert mine[gpu_solution.pk]["speedup"] == pytest.approx(2.0) and mine[gpu_solution.pk]["speedup_note"] is None

    rows = {r["submission_id"]: r for r in datasets.result_rows()}
    _not_computed(rows[cpu_solution.pk], "speedup", "speedup_ci_low", "speedup_ci_high", "roofline_fraction")
    assert rows[gpu_solution.pk]["speedup"] == pytest.approx(2.0) and rows[gpu_solution.pk]["speedup_note"] is None
