"""A model run's manifest may name the suite version its attempts answered; the upload stores it (default: the
suite's version at upload) and a run of another version is listed apart, never ranked."""

from __future__ import annotations

import json

import pytest

from leaderboard.model_runs.manifest import parse_manifest
from problems.registry import SUITE_VERSION
from tests.leaderboard import run_fixtures as fx

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


def test_the_manifest_takes_a_suite_version_and_refuses_nonsense():
    problems: list[str] = []
    manifest = parse_manifest("manifest.json", json.dumps({**BASE, "suite_version": "2025.01"}).encode(), problems)
    assert problems == [] and manifest.suite_version == "2025.01"
    assert manifest.as_dict()["suite_version"] == "2025.01"
    assert parse_manifest("manifest.json", json.dumps(BASE).encode(), []).suite_version is None
    bad: list[str] = []
    assert parse_manifest("manifest.json", json.dumps({**BASE, "suite_version": "x" * 40}).encode(), bad) is None
    assert any("suite_version" in p for p in bad)


@pytest.mark.django_db
def test_the_upload_stores_the_suite_version_and_another_version_is_not_ranked(problems, user, client):
    current = fx.make_run(user)
    assert current.suite_version == SUITE_VERSION
    old = fx.make_run(user, manifest=dict(fx.MANIFEST, model="old-suite", suite_version="2025.01"))
    assert old.suite_version == "2025.01" and old.score.status == "other-version"
    api = client.get("/api/rankings/model-runs/?standing=unranked").json()
    standing = {r["id"]: r["standing"] for r in api["results"]}
    assert standing[old.pk] == "other-version"
