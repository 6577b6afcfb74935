"""docs/agents.md's refinement loop, run as the document writes it, against a live portal and a real worker: only its
configuration lines (portal, token, problem, hardware, turns) and the model (`generate`) are filled in. The model
stub answers with a syntax error, then a wrong answer, then a right one; the loop must end with a pass, and each
reply it sent back must have told the model what happened."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from rest_framework.authtoken.models import Token

from evaluator.contract import jobs
from leaderboard.models import TestRun
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT, WRONG

pytestmark = pytest.mark.django_db(transaction=True)

SYNTAX_ERROR = "import torch\n\n\ndef solution(x: torch.Tensor) -> torch.Tensor\n    return x\n"


def loop_from_the_docs() -> str:
    text = (ROOT / "docs/agents.md").read_text()
    section = text.split("## A minimal loop", 1)[1]
    return re.search(r"^```python\n(.*?)^```$", section, re.S | re.M).group(1)


def configured(code: str, *, portal: str, token: str, log: str) -> str:
    """The loop with what a user fills in: the portal and token, the problem and hardware, the turn budget, and the
    model (here a stub that replays three answers and records the conversation it was given)."""
    replies = [
        f"Here is my attempt {i}:\n```python\n{source}```\n"
        for i, source in enumerate([SYNTAX_ERROR, WRONG.read_text(), CORRECT.read_text()])
    ]
    stub = (
        f"def generate(messages):\n"
        f"    replies = {replies!r}\n"
        f"    with open({log!r}, 'w') as f:\n"
        f"        json.dump(messages, f)\n"
        f"    return replies[min(len(messages) // 2, len(replies) - 1)]\n"
    )
    config = [
        (r"^PORTAL, TOKEN = .*$", lambda m: f"PORTAL, TOKEN = {portal!r}, {token!r}"),
        (
            r'^PROBLEM, HARDWARE, BACKEND, TURNS = "([^"]+)", "[^"]+", ("[^"]+"), \d+$',
            lambda m: f'PROBLEM, HARDWARE, BACKEND, TURNS = "{m[1]}", "cpu-gloo-2", {m[2]}, 4',
        ),
        (r"^def generate\(messages\):\n(?:    .*\n)+", lambda m: stub),
    ]
    for pattern, replacement in config:
        code, n = re.subn(pattern, replacement, code, count=1, flags=re.M)
        assert n == 1, f"docs/agents.md's loop no longer has {pattern!r}"
    return code


def test_the_documented_loop_reaches_a_pass_from_a_syntax_error_and_a_wrong_answer(
    problems, user, live_server, redis_conn, run_worker, tmp_path
):
    token = Token.objects.create(user=user).key
    log = tmp_path / "conversation.json"
    script = tmp_path / "loop.py"
    script.write_text(configured(loop_from_the_docs(), portal=live_server.url, token=token, log=str(log)))
    loop = subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 600
    try:
        while loop.poll() is None and time.monotonic() < deadline:
            if not run_worker(jobs.test_queue("cpu-gloo-2"), "web"):
                time.sleep(0.3)
    finally:
        if loop.poll() is None:
            loop.kill()
    out, err = loop.communicate()
    assert loop.returncode == 0, err
    assert re.search(r"^pack pp-\w+ best: passed$", out, re.M), out

    verdicts = list(
        TestRun.objects.filter(user=user, problem_id=ALL_REDUCE).order_by("id").values_list("verdict", flat=True)
    )
    assert verdicts == ["compile_error", "wrong_output", "passed", "passed"]
    messages = json.loads(log.read_text())
    feedback = [m["content"] for m in messages if m["role"] == "user"][1:]
    assert "verdict: compile_error" in feedback[0] and "solution.py:4: syntax:" in feedback[0], feedback[0]
    assert "verdict: wrong_output" in feedback[1] and "expected" in feedback[1], feedback[1]
    assert "verdict: passed" in feedback[2]
    last = TestRun.objects.filter(user=user).order_by("id").last()  # timed once something passed
    assert last.timing and last.document["timing"]["quick"] and last.document["timing"]["speedup"] > 0
