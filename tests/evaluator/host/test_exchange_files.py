"""What the host reads from the exchange folder: a FIFO planted there never stops the host, and a link there never
brings a host file into the result. The rank folders are the host's now (evaluator/host/evaluate.py,
_prepare_workdir), so the planting itself is refused; the host's refusal of a FIFO it finds is tested apart
(tests/evaluator/test_wire.py)."""

import os
import threading
import time
from pathlib import Path

import pytest

from evaluator.contract.spec import EvalSpec
from evaluator.host import sandbox
from evaluator.host.evaluate import evaluate

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or sandbox.probe("cpu") is not None, reason="needs root and bubblewrap"
)

RELEASE_S = 40.0  # a host that blocked on a FIFO would wait until the test opens its other end

# In its first timed call (no in.*.pt file left in its folder), replaces its output slot and its log by FIFOs.
FIFOS = """
import glob
import os
import sys

import torch
import torch.distributed as dist

_done = [False]


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    folder = f"/io/r{sys.argv[1]}"
    if not _done[0] and not glob.glob(f"{folder}/in.*.pt"):
        _done[0] = True
        for name in ("out.slot", "log.txt"):
            os.rename(f"{folder}/{name}", f"{folder}/{name}.old")
            os.mkfifo(f"{folder}/{name}")
    return out
"""


def _release_fifos(parent: Path, stop: threading.Event) -> None:
    """From RELEASE_S on, opens and closes every FIFO under ``parent`` for reading and writing (which never blocks)
    again and again, so a host blocked on one goes on and this test ends on code that would wait for a writer."""
    if stop.wait(RELEASE_S):
        return
    while not stop.wait(0.2):
        for path in parent.rglob("*"):
            if path.is_fifo():
                os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))


def test_fifos_in_the_exchange_folder_never_stop_the_host(tmp_path):
    stop = threading.Event()
    releaser = threading.Thread(target=_release_fifos, args=(tmp_path, stop), daemon=True)
    releaser.start()
    started = time.monotonic()
    try:
        doc = evaluate(
            EvalSpec(
                problem_id="collectives/all_reduce",
                solution_source=FIFOS,
                solution_name="f.py",
                profile="cpu-gloo-2",
                trials=1,
                timing_iterations=4,
                warmup_iterations=1,
                timeouts={"setup": 90.0, "correctness": 60.0, "timing": 60.0},
            ),
            workdir_parent=str(tmp_path),
        )
    finally:
        stop.set()
    assert time.monotonic() - started < RELEASE_S, "the host waited on a FIFO the solution planted"
    assert doc["verdict"] == "runtime_error" and "PermissionError" in doc["message"], doc["message"]
