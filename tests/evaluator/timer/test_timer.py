"""The compiled timer: it builds, times a call, and the host accepts only samples carrying its key in sequence.
Each case runs in a fresh interpreter: the timer opens once per process, as in a rank."""

import json
import subprocess
import sys
from pathlib import Path

from evaluator import timer

ROOT = Path(__file__).resolve().parents[3]
PROLOGUE = f"""
import json, os
from evaluator import timer
module = timer.load({str(timer.build())!r})
read_fd, write_fd = os.pipe()
module.open(write_fd, -1)
reader = timer.SampleReader(read_fd)
"""


def _run(body: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROLOGUE + body], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_samples_from_the_timer_are_accepted_in_order():
    out = _run("""
calls = []
us, launch, result = module.measure(lambda: calls.append("prepared"), lambda: sum(range(1000)))
module.measure(lambda: None, lambda: None)
reader.feed(os.read(read_fd, 4096))
print(json.dumps({"us": us, "result": result, "calls": calls, "samples": reader.samples, "error": reader.error}))
""")
    assert out["result"] == sum(range(1000)) and out["calls"] == ["prepared"] and out["us"] > 0
    assert out["error"] is None and len(out["samples"]) == 2 and out["samples"][0][0] == out["us"]


def test_a_sample_written_by_anyone_else_is_refused():
    out = _run("""
module.measure(lambda: None, lambda: None)
os.write(write_fd, b"ARNS" + (1).to_bytes(4, "little") + b"\\0" * 32)  # the right frame, without the key
reader.feed(os.read(read_fd, 4096))
print(json.dumps({"samples": len(reader.samples), "error": reader.error}))
""")
    assert out["samples"] == 1 and "did not come from the evaluator's timer" in out["error"]


def test_the_timer_opens_once():
    out = _run("""
try:
    module.open(write_fd, -1)
    print(json.dumps({"refused": ""}))
except RuntimeError as exc:
    print(json.dumps({"refused": str(exc)}))
""")
    assert "already open" in out["refused"]
