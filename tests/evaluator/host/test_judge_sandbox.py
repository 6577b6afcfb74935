"""The judge runs the problem's reference, and an imported suite's reference is third-party code: the judge's ranks
run in a bubblewrap sandbox of their own. A hostile imported reference that still computes the right answer looks
around from inside the judge; the test asserts what it could not reach, and that a correct solution still passes."""

from __future__ import annotations

import json
import os
import secrets
import textwrap
from pathlib import Path

import pytest

from evaluator.contract.spec import EvalSpec
from evaluator.host import sandbox
from evaluator.suites.installed import evaluate  # where evaluations start, as on a worker: dispatched to the suite
from evaluator.suites.pkb import importer
from problems import registry
from tests.evaluator.pkb_fake import CORRECT_ALL_REDUCE, write_checkout
from tests.evaluator.test_cheats import Listener

REPO = Path(__file__).resolve().parents[3]

HOSTILE = """
import glob
import json
import os
import socket

import torch.distributed as dist


def _look():
    seen = {"uid": os.getuid(), "repo": os.path.exists("REPO_PATH/.git") or os.path.exists("REPO_PATH/manage.py"),
            "markers": [m for m in MARKERS if os.path.exists(m)],
            "own_checkout": os.path.isdir("CHECKOUT_PATH/reference"),
            "other_folders": glob.glob("PARENT_PATH/*/solution") + glob.glob("PARENT_PATH/arena-eval-decoy/*"),
            "connected": False, "wrote_outside": False}
    try:
        with socket.create_connection(("127.0.0.1", LISTEN_PORT), timeout=1):
            seen["connected"] = True
    except OSError:
        pass
    for target in ("PARENT_PATH/judge-escape.txt", "REPO_PATH/judge-escape.txt"):
        try:
            with open(target, "w") as f:
                f.write("escaped")
            seen["wrote_outside"] = True
        except OSError:
            pass
    print("ARENA_JUDGE_SEES " + json.dumps(seen), flush=True)


_look()


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


@pytest.fixture
def hostile_suite(tmp_path, monkeypatch):
    listener = Listener()
    # Files of the host the judge must not see: in root's home, the host's /tmp, beside the checkout.
    token = secrets.token_hex(6)
    markers = [Path(d) / f"arena-judge-marker-{token}" for d in (os.path.expanduser("~"), "/tmp", str(tmp_path))]
    for m in markers:
        m.write_text("host only")
    body = (
        HOSTILE.replace("REPO_PATH", str(REPO))
        .replace("PARENT_PATH", str(tmp_path / "evals"))
        .replace("LISTEN_PORT", str(listener.port))
        .replace("MARKERS", repr([str(m) for m in markers]))
        .replace("CHECKOUT_PATH", str(tmp_path / "checkout"))
    )
    checkout = write_checkout(tmp_path / "checkout", replace={"1_all_reduce.py": textwrap.dedent(body)})
    monkeypatch.setenv("ARENA_SUITES_DIR", str(tmp_path / "suites"))
    registry.clear_caches()
    importer.import_checkout(checkout, probe=False)
    (tmp_path / "evals").mkdir()
    os.chmod(tmp_path / "evals", 0o755)
    decoy = tmp_path / "evals" / "arena-eval-decoy"  # another evaluation beside this one
    for name in ("solution/solution.py", "io/r0/log.txt", "judge/expected.t0.pt"):
        (decoy / name).parent.mkdir(parents=True, exist_ok=True)
        (decoy / name).write_text("another evaluation's")
    yield tmp_path, listener
    listener.close()
    for m in markers:
        m.unlink(missing_ok=True)
    registry.clear_caches()


@pytest.mark.skipif(os.geteuid() != 0 or sandbox.probe("cpu") is not None, reason="needs root and bubblewrap")
def test_a_hostile_imported_reference_reaches_nothing_from_inside_the_judge(hostile_suite):
    base, listener = hostile_suite
    doc = evaluate(
        EvalSpec(
            problem_id="pkb/1_all_reduce",
            solution_source=CORRECT_ALL_REDUCE,
            trials=2,
            measure_timing=False,
            params={"inputs": "original"},
        ),
        workdir_parent=str(base / "evals"),
        keep_workdir=True,
    )
    assert doc["verdict"] == "passed", doc["message"]
    logs = sorted(log for log in (base / "evals").glob("*/judge/judge*.log") if log.parts[-3] != "arena-eval-decoy")
    assert logs, "the judge's logs were kept"
    seen = [
        json.loads(line.split(" ", 1)[1])
        for log in logs
        for line in log.read_text().splitlines()
        if line.startswith("ARENA_JUDGE_SEES ")
    ]
    assert len(seen) >= 2  # every judge rank imported the reference and looked
    for s in seen:
        assert s["own_checkout"], "the probe sees what is bound (its own checkout), so what it misses is hidden"
        assert s["uid"] == sandbox.JUDGE_UID and s["uid"] not in (0, sandbox.SANDBOX_UID)
        assert not s["repo"], "the repository is visible from the judge"
        assert s["markers"] == [], f"host files are visible from the judge: {s['markers']}"
        assert s["other_folders"] == [], "the solution's or another evaluation's folders are visible"
        assert not s["connected"] and not s["wrote_outside"]
    assert listener.close() == 0
    assert not (base / "evals" / "judge-escape.txt").exists() and not (REPO / "judge-escape.txt").exists()
