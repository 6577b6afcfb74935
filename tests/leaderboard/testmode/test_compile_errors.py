"""Every upload that is a file gets a test result: a file that cannot be imported at all is a finished test with
``verdict: compile_error`` and ``diagnostics`` naming the line, never a 400; 400 stays for requests malformed as
requests. An import error found in the sandbox is a ``compile_error`` with the line too."""

from __future__ import annotations

import io

import pytest

from evaluator.contract import jobs
from leaderboard.models import TestRun
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT

pytestmark = pytest.mark.django_db(transaction=True)

SYNTAX = "import torch\n\ndef solution(x)\n    return x\n"


def _post_json(api_client, source, **extra):
    return api_client.post(
        "/api/tests/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": source, **extra}, format="json"
    )


def _post_file(api_client, data: bytes, name="solution.py"):
    upload = io.BytesIO(data)
    upload.name = name
    return api_client.post(
        "/api/tests/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "file": upload}, format="multipart"
    )


def _finished_compile_error(response) -> dict:
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "finished" and body["verdict"] == "compile_error", body
    result = body["result"]
    assert result["verdict"] == "compile_error" and result["test"]["ranked"] is False
    assert result["diagnostics"], result
    return result


def test_a_syntax_error_is_a_finished_test_with_its_line(problems, api_client, redis_conn):
    result = _finished_compile_error(_post_json(api_client, SYNTAX))
    first = result["diagnostics"][0]
    assert (first["file"], first["line"], first["kind"]) == ("solution.py", 3, "syntax")
    assert "SyntaxError" in first["text"] and "line 3" in result["message"]
    # The same through a multipart file, under the file's own name; and the GET gives the same document.
    response = _post_file(api_client, SYNTAX.encode(), name="attempt_2.py")
    result = _finished_compile_error(response)
    assert (result["diagnostics"][0]["file"], result["diagnostics"][0]["line"]) == ("attempt_2.py", 3)
    assert api_client.get(response.json()["api_url"]).json()["result"] == result
    assert redis_conn.keys("rq:job:*") == []  # nothing was queued: no worker is needed to say so


@pytest.mark.parametrize(
    "data, line, words",
    [
        (b"import torch\n\ndef helper(x):\n    return x\n", 1, "defines no top-level `solution`"),
        (b"", 1, "is empty"),
        (b"def solution(x):\n    return x\n# \xff\xfe\n", 3, "not UTF-8"),
        (b"def solution(x):\n    return x\x00\n", 2, "NUL"),
        (b"async def solution(x):\n    return x\n", 1, "async"),
    ],
)
def test_every_file_that_cannot_import_gets_a_result_not_a_400(problems, api_client, data, line, words):
    result = _finished_compile_error(_post_file(api_client, data))
    assert result["diagnostics"][0]["line"] == line and words in result["diagnostics"][0]["text"], result
    assert TestRun.objects.get().state == TestRun.State.FINISHED


def test_requests_malformed_as_requests_stay_400(problems, api_client):
    source = CORRECT.read_text()
    assert api_client.post("/api/tests/", {"profile": "cpu-gloo-2", "source": source}, format="json").status_code == 400
    assert (
        api_client.post("/api/tests/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2"}, format="json").status_code
        == 400
    )
    assert _post_json(api_client, source, profile="no-such-profile").status_code == 400
    assert (
        api_client.post(
            "/api/tests/", {"problem": "no/such", "profile": "cpu-gloo-2", "source": source}, format="json"
        ).status_code
        == 400
    )
    assert _post_file(api_client, b"def solution(x):\n    return x\n", name="solution.txt").status_code == 400
    assert TestRun.objects.count() == 0


def test_import_errors_in_the_sandbox_name_their_line(problems, api_client, run_worker):
    missing = _post_json(api_client, "import torch\nimport no_such_module_here\n\ndef solution(x):\n    return x\n")
    # The reference's own import, copied from the problem page: refused by the static check, with its line.
    harness = _post_json(api_client, "import torch\nfrom problems.collectives.all_reduce.reference import solution\n")
    assert [r.json()["state"] for r in (missing, harness)] == ["queued", "queued"]
    run_worker(jobs.test_queue("cpu-gloo-2"), "web")
    for response, verdict in ((missing, "compile_error"), (harness, "rejected")):
        detail = api_client.get(response.json()["api_url"]).json()
        assert detail["verdict"] == verdict, detail["result"]["message"]
        assert any(d["file"] == "solution.py" and d["line"] == 2 for d in detail["result"]["diagnostics"]), detail
