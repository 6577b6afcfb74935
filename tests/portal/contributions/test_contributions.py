"""Problem contributions: a proposed folder is validated at once by the registry, stored, checked on CPU by a real
RQ worker (reference against oracle at W = 2 and 4, known answers), and reviewed by moderators, who alone can
accept or reject it; an accepted proposal downloads as a zip of its folder."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rq import Queue

from portal.contributions.models import ProblemProposal
from problems.registry import PROBLEMS_ROOT

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = PROBLEMS_ROOT / "collectives" / "all_reduce"
FILES = {name: (EXAMPLE / name).read_text() for name in ("problem.toml", "reference.py", "README.md")}
CORRECT = EXAMPLE / "solutions" / "correct" / "nccl_inplace_copy.py"
WRONG = EXAMPLE / "solutions" / "wrong" / "off_on_one_rank.py"


def _upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/plain")


def _form(name: str = "sum_over_ranks", **overrides) -> dict:
    files = {**FILES, **overrides}
    return {
        "category": "collectives",
        "name": name,
        "problem_toml_file": _upload("problem.toml", files["problem.toml"]),
        "reference_py": files["reference.py"],  # pasted
        "readme_md_file": _upload("README.md", files["README.md"]),
        "correct": [_upload(CORRECT.name, CORRECT.read_text())],
        "wrong": [_upload(WRONG.name, WRONG.read_text())],
    }


@pytest.fixture
def moderator(db, django_user_model):
    person = django_user_model.objects.create_user(username="mo", password="a-long-test-password-2")
    person.groups.add(Group.objects.get_or_create(name="moderators")[0])
    return person


def _propose(web_client, **kwargs) -> ProblemProposal:
    response = web_client.post(reverse("proposal-create"), _form(**kwargs))
    assert response.status_code == 302, response.content.decode()[:3000]
    proposal = ProblemProposal.objects.get()
    assert response["Location"] == reverse("proposal-detail", args=[proposal.pk])
    return proposal


def test_valid_proposal_is_stored_checked_by_a_worker_and_shows_checked_with_its_report(
    web_client, run_worker, redis_conn
):
    readme = FILES["README.md"] + "\nA note with <script>alert('x')</script> in it.\n"
    proposal = _propose(web_client, **{"README.md": readme})
    assert proposal.state == "submitted" and proposal.problem_id == "collectives/sum_over_ranks"
    assert proposal.title == "All-reduce (sum)" and proposal.version == 1 and len(proposal.content_hash) == 64
    assert [(a["kind"], a["filename"]) for a in proposal.solutions] == [
        ("correct", CORRECT.name),
        ("wrong", WRONG.name),
    ]
    assert Queue("checks", connection=redis_conn).count == 1

    page = web_client.get(reverse("proposal-detail", args=[proposal.pk])).content.decode()
    assert 'http-equiv="refresh"' in page and ">submitted<" in page

    run_worker("checks", "web")

    proposal.refresh_from_db()
    assert proposal.state == "checked", proposal.check_report
    report = proposal.check_report
    assert report["ok"] and report["world_sizes"] == [2, 4] and report["warnings"] == []
    assert [(r["world_size"], r["ok"]) for r in report["reference"]] == [(2, True), (4, True)]
    assert {(a["kind"], a["world_size"], a["passed_oracle"]) for a in report["known_answers"]} == {
        ("correct", 2, True),
        ("correct", 4, True),
        ("wrong", 2, False),
        ("wrong", 4, False),
    }
    assert all(a["ok"] for a in report["known_answers"])
    assert proposal.checked_at and proposal.check_worker

    page = web_client.get(reverse("proposal-detail", args=[proposal.pk])).content.decode()
    assert ">checked<" in page and 'id="check-reference"' in page and 'id="check-known-answers"' in page
    assert 'http-equiv="refresh"' not in page
    assert "&lt;script&gt;" in page and "<script>alert" not in page  # files are highlighted and escaped
    assert 'class="highlight' in page
    mine = web_client.get(reverse("proposal-list")).content.decode()
    assert "collectives/sum_over_ranks" in mine and ">checked<" in mine


def test_api_proposes_with_a_token_and_reads_ones_own_proposals(api_client, run_worker, client):
    body = {
        "category": "collectives",
        "name": "sum_api",
        "problem_toml": FILES["problem.toml"],
        "reference_py": FILES["reference.py"],
        "readme_md": FILES["README.md"],
        "correct": [{"filename": "copy.py", "source": CORRECT.read_text()}],
    }
    response = api_client.post("/api/proposals/", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["state"] == "submitted" and created["problem_id"] == "collectives/sum_api"
    assert created["known_answers"] == [{"kind": "correct", "filename": "copy.py"}]
    assert response["Location"].endswith(f"/api/proposals/{created['id']}/") and created["download_url"] is None
    uploads = {
        "category": "collectives",
        "name": "sum_multipart",
        **{
            field: _upload(name, FILES[name])
            for field, name in (
                ("problem_toml", "problem.toml"),
                ("reference_py", "reference.py"),
                ("readme_md", "README.md"),
            )
        },
        "correct": [_upload("a.py", CORRECT.read_text()), _upload("b.py", CORRECT.read_text())],
        "wrong": [_upload(WRONG.name, WRONG.read_text())],
    }
    response = api_client.post("/api/proposals/", uploads, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["known_answers"] == [
        {"kind": "correct", "filename": "a.py"},
        {"kind": "correct", "filename": "b.py"},
        {"kind": "wrong", "filename": WRONG.name},
    ]

    run_worker("checks", "web")

    detail = api_client.get(created["api_url"]).json()
    assert detail["state"] == "checked", detail["check_report"]
    assert any("no wrong known answer" in w for w in detail["check_report"]["warnings"])
    assert [p["id"] for p in api_client.get("/api/proposals/").json()] == [created["id"] + 1, created["id"]]
    assert api_client.get(f"/api/proposals/{created['id'] + 1}/").json()["state"] == "checked"
    assert client.get("/api/proposals/").status_code in (401, 403)  # anonymous
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/proposals/" in schema and "proposals_create" in schema and "/api/proposals/{proposal_id}/" in schema
    assert "proposals_create" in client.get(reverse("api-docs")).content.decode()


def test_malformed_toml_is_refused_naming_the_file_and_field_and_nothing_is_stored(web_client, api_client, redis_conn):
    no_version = FILES["problem.toml"].replace("version = 1\n", "")
    response = web_client.post(reverse("proposal-create"), _form(**{"problem.toml": no_version}))
    assert response.status_code == 400
    page = response.content.decode()
    assert "problems/collectives/sum_over_ranks/problem.toml: the field &#x27;version&#x27; is missing" in page

    bad_dtype = FILES["problem.toml"].replace('dtype = "float32"', 'dtype = "float33"')
    response = api_client.post(
        "/api/proposals/",
        {
            "category": "collectives",
            "name": "sum_api",
            "problem_toml": bad_dtype,
            "reference_py": FILES["reference.py"],
            "readme_md": FILES["README.md"],
        },
        format="json",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "[presets.small]: the field 'dtype' is 'float33'" in errors["problem_toml"][0]

    response = api_client.post(
        "/api/proposals/",
        {
            "category": "collectives",
            "name": "sum_api",
            "problem_toml": "title = [unclosed",
            "reference_py": "x = 1\n",
            "readme_md": "# t\n",
        },
        format="json",
    )
    assert response.status_code == 400 and "problem.toml: not valid TOML" in response.json()["detail"]

    assert not ProblemProposal.objects.exists()
    assert Queue("checks", connection=redis_conn).count == 0


def test_reference_that_disagrees_with_its_oracle_ends_failed_with_the_reason(web_client, run_worker):
    maxed = FILES["reference.py"].replace("op=dist.ReduceOp.SUM", "op=dist.ReduceOp.MAX")
    assert maxed != FILES["reference.py"]
    proposal = _propose(web_client, **{"reference.py": maxed})

    run_worker("checks", "web")

    proposal.refresh_from_db()
    assert proposal.state == "failed"
    message = proposal.check_report["message"]
    assert message.startswith("at W=2, rank 0: reference differs from oracle") and "values differ" in message
    page = web_client.get(reverse("proposal-detail", args=[proposal.pk])).content.decode()
    assert ">failed<" in page and "reference differs from oracle" in page


def test_only_moderators_accept_or_reject_others_get_403(
    web_client, user, moderator, client, django_user_model, run_worker
):
    proposal = _propose(web_client)
    run_worker("checks", "web")
    review = reverse("proposal-review", args=[proposal.pk])

    # the author is not a moderator
    assert web_client.post(review, {"decision": "accept"}).status_code == 403
    assert web_client.get(reverse("proposal-review-queue")).status_code == 403
    assert web_client.post(reverse("proposal-recheck", args=[proposal.pk])).status_code == 403
    # neither is anyone else signed in, who cannot even see the proposal
    other = django_user_model.objects.create_user(username="eve", password="a-long-test-password-3")
    client.force_login(other)
    assert client.post(review, {"decision": "reject", "note": "no"}).status_code == 403
    assert client.get(reverse("proposal-detail", args=[proposal.pk])).status_code == 404
    proposal.refresh_from_db()
    assert proposal.state == "checked" and proposal.moderator is None

    client.force_login(moderator)
    queue = client.get(reverse("proposal-review-queue")).content.decode()
    assert "collectives/sum_over_ranks" in queue
    detail = client.get(reverse("proposal-detail", args=[proposal.pk])).content.decode()
    assert 'id="review-form"' in detail
    response = client.post(review, {"decision": "reject", "note": ""})
    assert response.status_code == 400 and "Say why the proposal is rejected" in response.content.decode()
    response = client.post(review, {"decision": "accept", "note": "Clear statement; merging."})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.state == "accepted" and proposal.moderator == moderator
    assert proposal.moderator_note == "Clear statement; merging." and proposal.reviewed_at
    assert client.post(review, {"decision": "reject", "note": "changed my mind"}).status_code == 400

    # staff are moderators too, and a failed proposal can be rejected but not accepted
    staff = django_user_model.objects.create_user(username="st", password="a-long-test-password-4", is_staff=True)
    failed = ProblemProposal.objects.create(
        author=user,
        category="collectives",
        name="other",
        title="t",
        version=1,
        problem_toml="",
        reference_py="",
        readme_md="",
        content_hash="0" * 64,
        state="failed",
    )
    client.force_login(staff)
    review = reverse("proposal-review", args=[failed.pk])
    assert client.post(review, {"decision": "accept"}).status_code == 400
    assert client.post(review, {"decision": "reject", "note": "The oracle disagrees."}).status_code == 302
    failed.refresh_from_db()
    assert failed.state == "rejected"
    page = web_client.get(reverse("proposal-detail", args=[failed.pk])).content.decode()
    assert "The oracle disagrees." in page


def test_accepted_proposal_downloads_as_a_zip_of_its_folder(web_client, moderator, client, run_worker):
    proposal = _propose(web_client)
    download = reverse("proposal-download", args=[proposal.pk])
    assert web_client.get(download).status_code == 404  # not accepted yet
    run_worker("checks", "web")
    client.force_login(moderator)
    assert client.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "accept"}).status_code == 302

    page = web_client.get(reverse("proposal-detail", args=[proposal.pk])).content.decode()
    assert download in page and "pull request" in page
    response = web_client.get(download)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="collectives-sum_over_ranks-v1.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    folder = "problems/collectives/sum_over_ranks/"
    assert sorted(archive.namelist()) == sorted(
        folder + p
        for p in (
            "README.md",
            "problem.toml",
            "reference.py",
            f"solutions/correct/{CORRECT.name}",
            f"solutions/wrong/{WRONG.name}",
        )
    )
    assert archive.read(folder + "reference.py").decode() == FILES["reference.py"]
    assert archive.read(folder + f"solutions/wrong/{WRONG.name}").decode() == WRONG.read_text()
    assert not (Path(PROBLEMS_ROOT) / "collectives" / "sum_over_ranks").exists()  # the site never writes problems/
    assert client.get(download).content == response.content  # moderators download the same bytes
