"""A model run goes from upload to scores through the real pipeline: each attempt is a submission evaluated
by a real RQ worker running the real evaluator on the run's hardware profile queue, and the run's progress and
scores follow as results land. Uploaded through the API, and through the `arena submit --model-run` CLI
against a live server."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT, WRONG

pytestmark = pytest.mark.django_db(transaction=True)

MANIFEST = {
    "model": "e2e-coder",
    "provider": "Test Labs",
    "protocol": "agentic",
    "k": 2,
    "turn_budget": 5,
    "tokens": 4200,
    "wall_time_s": 90,
    "hardware": "cpu-gloo-2",
    "date": "2026-11-29",
    "open_weights": False,
}
ATTEMPTS = {(ALL_REDUCE, 1): CORRECT.read_text(), (ALL_REDUCE, 2): WRONG.read_text()}
LABEL = "agentic · k=2 · 5 turns · 4.2k tokens · 2 min"


def test_api_upload_is_evaluated_attempt_by_attempt_and_scored(problems, api_client, run_worker, client):
    response = api_client.post(
        "/api/model-runs/",
        {"archive": SimpleUploadedFile("run.zip", build_archive(MANIFEST, ATTEMPTS))},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]

    page = client.get(f"/runs/{run_id}/").content.decode()
    assert '0</span> of <span id="attempts-total">2</span> attempts done' in page
    assert 'http-equiv="refresh"' in page and 'data-verdict="queued"' in page

    run_worker("cpu-gloo-2", "web")

    run = ModelRun.objects.get(pk=run_id)
    verdicts = dict(run.attempts.values_list("attempt", "verdict"))
    assert verdicts == {1: "passed", 2: "wrong_output"}, [a.result.document["message"] for a in run.attempts.all()]
    assert (run.state, run.attempts_done, run.attempts_total) == ("finished", 2, 2)
    # one problem, n=2, c=1: pass@2 = 1 - C(1,2)/C(2,2) = 1; pass@1 = 1/2
    assert run.score.pass_at_k == 1.0 and run.score.pass_at_1 == 0.5
    detail = api_client.get(f"/api/model-runs/{run_id}/").json()
    assert detail["state"] == "finished" and detail["protocol"]["label"] == LABEL
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert 'data-verdict="passed"' in page and 'data-verdict="wrong_output"' in page
    assert 'data-metric="pass_at_k">100.0 %' in page and 'data-metric="pass_at_1">50.0 %' in page


def test_cli_uploads_a_model_run_and_follows_it_to_its_scores(problems, user, live_server, run_worker, tmp_path):
    # --wait: the worker starts only once the run is uploaded (without it the CLI says no worker serves the profile
    # and ends with status 3, tests/evaluator/cli/test_submit.py).
    archive = tmp_path / "run.zip"
    archive.write_bytes(build_archive(MANIFEST, ATTEMPTS))
    token = Token.objects.create(user=user)
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "submit",
            "--portal",
            live_server.url,
            "--token",
            token.key,
            "--model-run",
            str(archive),
            "--timeout",
            "120",
            "--wait",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ModelRun.objects.exists():
            assert cli.poll() is None, cli.stdout.read()
            assert time.monotonic() < deadline, "the CLI never uploaded the run"
            time.sleep(0.2)
        run_worker("cpu-gloo-2", "web")
        out, _ = cli.communicate(timeout=90)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, out
    run = ModelRun.objects.get()
    assert f"model run {run.pk} accepted: 2 attempts queued" in out
    assert f"model run {run.pk}: 2/2 attempts done" in out
    assert f"protocol: {LABEL}" in out and "pass@2 100.0 %" in out and "pass@1 50.0 %" in out


def test_cli_prints_every_problem_of_a_refused_archive(problems, user, live_server, tmp_path):
    archive = tmp_path / "bad.zip"
    archive.write_bytes(build_archive(dict(MANIFEST, k=3), ATTEMPTS))
    token = Token.objects.create(user=user)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "submit",
            "--portal",
            live_server.url,
            "--token",
            token.key,
            "--model-run",
            str(archive),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "refused the request (400)" in run.stderr
    assert "archive: attempts/collectives/all_reduce/: has attempt_1.py, attempt_2.py but k=3" in run.stderr
    assert ModelRun.objects.count() == 0
