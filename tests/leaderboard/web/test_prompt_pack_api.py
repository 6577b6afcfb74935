"""`GET /api/prompts/?...&format=jsonl`, as the README shows it, answers the pack one prompt a line (it was a 404
"Not found.": DRF took `format` for a renderer it did not have)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def test_the_prompt_pack_answers_jsonl_lines_and_json(client):
    lines = client.get("/api/prompts/?backend=triton&hardware=h200-nvlink-4&format=jsonl")
    assert lines.status_code == 200, lines.content[:200]
    assert lines["Content-Type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in lines.content.splitlines()]
    whole = client.get("/api/prompts/?backend=triton&hardware=h200-nvlink-4").json()
    assert len(rows) == whole["count"] > 0 and rows[0]["pack_version"] == whole["pack_version"]
    refused = client.get("/api/prompts/?backend=nope&hardware=h200-nvlink-4&format=jsonl")
    assert refused.status_code == 400 and "backend" in json.loads(refused.content)["errors"]  # in words
