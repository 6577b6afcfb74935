"""Datasets: the export of a demo database, through the command and the /datasets/ page; Parquet round-trips;
prompt packs on the problem page and the API; a model run names its prompt pack."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from leaderboard.models import Problem, Result
from leaderboard.rankings.metrics import measures_speed
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db

DATE = dt.date(2026, 12, 1)


@pytest.fixture
def demo(problems):
    call_command("seed_demo", runs=2, problems=4, attempts=2, users=2, verbosity=0)
    assert Result.objects.exists()
    # A measured result beside the seeded ones, whatever profiles the seed drew.
    user = get_user_model().objects.create_user("gpu-author")
    submission = submission_create(
        user=user, problem=ALL_REDUCE, profile="h200-nvlink-4", filename="s.py", source=CORRECT.read_text()
    )
    result_record(submission_id=submission.pk, document=passed_document(1.7))


def test_export_writes_the_hugging_face_layout_and_round_trips(demo, tmp_path):
    from leaderboard.datasets.export import export_datasets

    call_command("export_datasets", str(tmp_path / "a"), "--date", DATE.isoformat(), verbosity=0)
    out = next((tmp_path / "a").iterdir())
    out = type("Out", (), {"root": out})
    again = export_datasets(tmp_path / "b", date=DATE)
    assert out.root.name == again.root.name and DATE.isoformat() in out.root.name
    card = (out.root / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card and "path: data/results/train-*.parquet" in card
    assert "Datasheet" in card and "Licence" in card and "How results were measured" in card
    manifest = json.loads((out.root / "manifest.json").read_text())
    assert manifest["counts"]["problems"] == Problem.objects.filter(is_active=True).count()
    assert manifest["counts"]["results"] == Result.objects.count() and manifest["counts"]["prompts"] > 0
    for name in manifest["files"]:  # reproducible from the database: byte for byte the same
        assert (again.root / name).read_bytes() == (out.root / name).read_bytes(), name
    for config in ("problems", "prompts", "results"):
        table = pq.read_table(out.root / "data" / config / "train-00000-of-00001.parquet")
        lines = (out.root / "jsonl" / f"{config}.jsonl").read_text().splitlines()
        assert table.num_rows == len(lines) == manifest["counts"][config]
        assert table.to_pylist()[0] == {k: v for k, v in json.loads(lines[0]).items()}
    results = pq.read_table(out.root / "data/results/train-00000-of-00001.parquet").to_pylist()
    assert all("source" not in row for row in results)
    sources = {s for s in Result.objects.values_list("submission__source", flat=True) if len(s) > 40}
    text = (out.root / "jsonl/results.jsonl").read_text()
    assert not any(s in text for s in sources)  # no private source
    passed = [r for r in results if r["verdict"] == "passed"]
    assert next(r for r in passed if r["model_run_id"])["protocol"] in ("zero-shot", "agentic")
    row = next(r for r in passed if measures_speed(r["hardware"]))
    assert row["speedup"] is not None and row["speedup_note"] is None
    # A CPU profile's timings only check the pipeline: no speedup, and a note saying so.
    assert all(r["speedup"] is None and r["speedup_note"] for r in passed if not measures_speed(r["hardware"]))
    try:
        import datasets
    except ImportError:
        return
    loaded = datasets.load_dataset("parquet", data_files=str(out.root / "data/results/*.parquet"), split="train")
    assert loaded.num_rows == len(results)


def test_datasets_page_and_downloads(demo, client):
    page = client.get("/datasets/")
    assert page.status_code == 200 and b"Datasheet" in page.content and b"/datasets/results.parquet" in page.content
    jsonl = client.get("/datasets/results.jsonl")
    assert jsonl.status_code == 200 and len(jsonl.content.decode().splitlines()) == Result.objects.count()
    import io

    parquet = client.get("/datasets/problems.parquet")
    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == Problem.objects.filter(is_active=True).count()
    assert client.get("/datasets/nothing.jsonl").status_code == 404


def test_prompt_pack_download_on_the_problem_page_and_the_api(problems, client):
    page = client.get("/problems/collectives/all_reduce/")
    assert b'id="prompt-download"' in page.content
    rows = [json.loads(x) for x in client.get("/problems/collectives/all_reduce/prompts/").content.splitlines()]
    assert {r["backend"] for r in rows} >= {"cuda", "triton", "symmetric-memory"}
    assert {r["problem"] for r in rows} == {"collectives/all_reduce"}
    body = client.get("/api/prompts/?backend=cuda&hardware=h200-nvlink-4").json()
    assert body["pack_version"].startswith("pp-") and body["count"] == len(body["prompts"])
    assert client.get("/api/prompts/?backend=nope&hardware=h200-nvlink-4").status_code == 400
