"""A model run's manifest names the prompt pack its attempts were generated from."""

from __future__ import annotations

import json

from leaderboard.model_runs.manifest import parse_manifest

BASE = {
    "model": "m",
    "provider": "p",
    "protocol": "zero-shot",
    "k": 1,
    "turn_budget": 0,
    "tokens": 0,
    "wall_time_s": 1,
    "hardware": "cpu-gloo-2",
    "date": "2026-12-01",
    "open_weights": True,
}


def test_the_manifest_takes_a_prompt_pack_version_and_refuses_anything_else():
    problems: list[str] = []
    manifest = parse_manifest(
        "manifest.json", json.dumps({**BASE, "prompt_pack": "pp-0123456789ab"}).encode(), problems
    )
    assert problems == [] and manifest.prompt_pack == "pp-0123456789ab"
    assert manifest.as_dict()["prompt_pack"] == "pp-0123456789ab"
    assert parse_manifest("manifest.json", json.dumps(BASE).encode(), []).prompt_pack is None
    bad: list[str] = []
    assert parse_manifest("manifest.json", json.dumps({**BASE, "prompt_pack": "latest"}).encode(), bad) is None
    assert any("prompt_pack" in p for p in bad)
