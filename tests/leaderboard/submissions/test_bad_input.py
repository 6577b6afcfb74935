"""Hostile or broken uploads beyond the everyday mistakes of test_upload_refusals.py: binary files, other encodings,
bodies over the request cap, malformed JSON, and hostile model-run archives. Each is answered with a 4xx that says
what is wrong, and nothing is stored or queued."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from rq import Queue

from leaderboard.models import ModelRun, Submission
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

GOOD = CORRECT.read_text()
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
ELF = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"

# (case, filename, content, words the message must hold)
BINARY = [
    ("png_named_py", "solution.py", PNG, ["not UTF-8", "byte 0x89"]),
    ("elf_named_py", "solution.py", ELF, ["NUL bytes", "not Python source"]),
    ("utf16_with_bom", "solution.py", "def solution(x):\n    return x\n".encode("utf-16"), ["not UTF-8"]),
    ("nul_inside_text", "solution.py", GOOD.encode() + b"\n# \x00\n", ["NUL bytes"]),
    ("python2", "solution.py", b'def solution(x):\n    print "x"\n    return x\n', ["not valid Python", "line 2"]),
    ("zip_named_py", "solution.py", b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\xfe", ["not UTF-8"]),
    ("only_a_bom", "solution.py", b"\xef\xbb\xbf", ["empty"]),
]


def _nothing_stored(redis_conn) -> None:
    assert Submission.objects.count() == 0 and ModelRun.objects.count() == 0
    for name in ("cpu-gloo-2", "cpu-gloo-4", "web"):
        assert Queue(name, connection=redis_conn).count == 0


@pytest.mark.parametrize("case,filename,content,words", BINARY, ids=[c[0] for c in BINARY])
def test_binary_or_foreign_files_are_refused_through_api_and_form(
    case, filename, content, words, problems, api_client, web_client, redis_conn
):
    response = api_client.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": SimpleUploadedFile(filename, content)},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    for word in words:
        assert word in response.json()["detail"], response.json()
    form = web_client.post(
        reverse("submission-create"),
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": SimpleUploadedFile(filename, content)},
    )
    assert form.status_code == 400
    shown = " ".join(form.context["form"].errors["file"])
    for word in words:
        assert word in shown, shown
    _nothing_stored(redis_conn)


@override_settings(ARENA_MAX_REQUEST_BYTES=64 * 1024)
def test_a_body_over_the_request_cap_is_refused_before_it_is_read(problems, api_client, web_client, redis_conn):
    big = SimpleUploadedFile("solution.py", GOOD.encode() + b"#" * (100 * 1024))
    response = api_client.post(
        "/api/submissions/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": big}, format="multipart"
    )
    assert response.status_code == 413
    assert "too large" in response.json()["detail"] and "the limit is 64 KiB" in response.json()["detail"]
    big.seek(0)
    page = web_client.post(reverse("submission-create"), {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": big})
    assert page.status_code == 413 and b"the limit is 64 KiB" in page.content and b"<h1>Too large</h1>" in page.content
    _nothing_stored(redis_conn)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=32 * 1024)
def test_pasted_source_over_the_form_data_limit_gets_the_same_clear_413(problems, web_client, redis_conn):
    response = web_client.post(
        reverse("submission-create"),
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD + "#" * (40 * 1024)},
    )
    assert response.status_code == 413
    assert b"form data is too large" in response.content and b"the limit is 32 KiB" in response.content
    _nothing_stored(redis_conn)


def test_pasted_json_source_over_the_source_limit_says_the_limit(problems, api_client, redis_conn):
    response = api_client.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": GOOD + "#" * (300 * 1024)},
        format="json",
    )
    assert response.status_code == 400 and "the limit is 256 KiB" in response.json()["detail"]
    _nothing_stored(redis_conn)


@pytest.mark.parametrize(
    "body,words",
    [
        (b'{"problem": "collectives/all_reduce", "profile": ', ["JSON parse error"]),
        (
            b'{"problem": "collectives/all_reduce", "profile": "cpu-gloo-2", "source": ["not", "text"]}',
            ["Not a valid string"],
        ),
        (b"\xff\xfe{}", ["JSON parse error"]),
    ],
    ids=["truncated", "source_not_a_string", "not_utf8"],
)
def test_malformed_json_is_refused_with_a_parse_message(body, words, problems, api_client, redis_conn):
    response = api_client.generic("POST", "/api/submissions/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    for word in words:
        assert word in response.content.decode()
    _nothing_stored(redis_conn)


# --- model-run archives (leaderboard/model_runs/ validates them; these check the answer at the web's door) ---


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def _tar_with_symlink() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        link = tarfile.TarInfo("manifest.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    return out.getvalue()


ARCHIVES = [
    ("path_traversal", "run.zip", _zip({"manifest.json": b"{}", "../../portal/settings.py": b"x = 1\n"}), [".."]),
    (
        "zip_bomb",
        "run.zip",
        _zip({"manifest.json": b"{}", "attempts/collectives/all_reduce/attempt_1.py": b"\0" * (110 * 1024 * 1024)}),
        ["MiB"],
    ),
    ("symlink", "run.tar.gz", _tar_with_symlink(), ["link"]),
    ("empty_file", "run.zip", b"", ["empty"]),
]


@pytest.mark.parametrize("case,filename,data,words", ARCHIVES, ids=[c[0] for c in ARCHIVES])
def test_hostile_archives_are_refused_at_the_api(case, filename, data, words, problems, api_client, redis_conn):
    response = api_client.post("/api/model-runs/", {"archive": SimpleUploadedFile(filename, data)}, format="multipart")
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    for word in words:
        assert word in detail, detail
    _nothing_stored(redis_conn)


@override_settings(ARENA_MAX_REQUEST_BYTES=64 * 1024)
def test_an_archive_over_the_request_cap_is_refused_before_it_is_read(problems, api_client, redis_conn):
    data = _zip({"manifest.json": b"{}", "trajectories/x.txt": os.urandom(100 * 1024)})  # incompressible
    response = api_client.post("/api/model-runs/", {"archive": SimpleUploadedFile("run.zip", data)}, format="multipart")
    assert response.status_code == 413 and "too large" in response.json()["detail"]
    _nothing_stored(redis_conn)
