"""The problem catalogue in the database mirrors the registry, and the read API serves it."""

from __future__ import annotations

from django.core.management import call_command

from leaderboard.models import Problem
from leaderboard.catalogue.services import problems_sync
from problems.registry import catalogue
from tests.leaderboard.helpers import ALL_REDUCE


def test_load_problems_is_idempotent(db, capsys):
    call_command("load_problems")
    first = {p.pk: (p.content_hash, p.updated_at) for p in Problem.objects.all()}
    assert set(first) == set(catalogue())
    call_command("load_problems")
    out = capsys.readouterr().out
    assert f"0 created, 0 updated, {len(first)} unchanged" in out
    assert {p.pk: (p.content_hash, p.updated_at) for p in Problem.objects.all()} == first


def test_a_problem_that_left_the_registry_is_deactivated_not_deleted(problems):
    registry = dict(catalogue())
    registry.pop(ALL_REDUCE)
    report = problems_sync(problems=registry)
    assert report.deactivated == [ALL_REDUCE]
    assert Problem.objects.get(pk=ALL_REDUCE).is_active is False


def test_problem_row_holds_what_the_site_shows(problems):
    row = Problem.objects.get(pk=ALL_REDUCE)
    source = catalogue()[ALL_REDUCE]
    assert row.version == source.version and row.content_hash == source.content_hash
    assert row.statement == source.statement and "def solution" in row.reference_source
    assert row.world_sizes == list(source.world_sizes) and row.category == "collectives"
    assert row.presets["small"]["dtype"] == "float32"


def test_problem_api_lists_and_details_ids_with_a_slash(problems, client):
    listed = client.get("/api/problems/").json()
    assert ALL_REDUCE in [p["id"] for p in listed]
    detail = client.get(f"/api/problems/{ALL_REDUCE}/").json()
    assert detail["id"] == ALL_REDUCE and "cpu-gloo-2" in detail["supported_profiles"]
    assert "statement" in detail and "reference_source" in detail
    assert client.get("/api/problems/collectives/nope/").status_code == 404
    assert client.get("/api/problems/?category=collectives").json()[0]["category"] == "collectives"


def test_ranking_api_explains_an_unsupported_profile(problems, client):
    response = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile=tpu")
    assert response.status_code == 400 and "choose one of" in response.json()["detail"]


def test_pages_render(problems, client):
    home = client.get("/").content.decode()
    assert "Collectives" in home and f"/problems/{ALL_REDUCE}/" in home
    page = client.get(f"/problems/{ALL_REDUCE}/").content.decode()
    assert "<h2>Statement</h2>" in page and 'class="highlight' in page  # markdown + Pygments
    assert "No passed solution" in page
    assert client.get("/problems/collectives/nope/").status_code == 404


def test_statement_markdown_escapes_raw_html(problems, client):
    Problem.objects.filter(pk=ALL_REDUCE).update(statement="# T\n\n<script>alert(1)</script>\n\nok <b>x</b>")
    page = client.get(f"/problems/{ALL_REDUCE}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_openapi_schema_and_docs_page(db, client):
    schema = client.get("/api/schema/?format=json").json()
    assert "/api/submissions/" in schema["paths"]
    assert "/api/problems/{problem_id}/ranking/" in schema["paths"]
    docs = client.get("/api/docs/").content.decode()
    assert "/api/submissions/" in docs and "cdn" not in docs.lower()
