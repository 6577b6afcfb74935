"""Checks `arena import-pkb` end to end on an NVLink GPU host and writes what it saw to OUTDIR.

  python benchmarks/pkb_gpu_check.py OUTDIR [--profile h200-nvlink-2]

Builds the tests' fake ParallelKernelBench checkout (tests/evaluator/pkb_fake.py) plus a reference that runs only
on GPUs, imports it with the CPU probe, then evaluates on the GPU profile: a correct all-reduce (timed), the
constant-returning cheat on the constant-input all-reduce (must be wrong_output), a solution relying on a
replicated weight (must pass: the weight stays replicated), the reference that refuses random values (falls
back to original inputs, decided at import), and the GPU-only reference (undecided at import, decided on the
GPU at evaluation; the cheat must still be caught there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402  (no torch import: set before torch loads)

os.environ.update(MULTICAST_OFF)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--profile", default="h200-nvlink-2")
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pkb-gpu-"))
    os.environ["ARENA_SUITES_DIR"] = str(work / "suites")

    from evaluator.suites.pkb import importer as pkb
    from evaluator.suites.installed import evaluate  # resolves the spec, dispatches it to the suite's evaluator
    from evaluator.contract.spec import EvalSpec
    from problems import registry
    from tests.evaluator.pkb_fake import CONSTANT_CHEAT, CORRECT_ALL_REDUCE, REPLICATION_AWARE_MATMUL, write_checkout

    checkout = write_checkout(work / "checkout", git=shutil.which("git") is not None, cuda_only=True)
    registry.clear_caches()
    t0 = time.monotonic()
    report = pkb.import_checkout(checkout)
    lines = [report.summary(), f"import wall {time.monotonic() - t0:.1f} s", ""]
    assert report.ok, report.summary()

    split_ref = (checkout / "reference" / "4_expert_split_by_counts.py").read_text()
    cases = [
        ("correct all-reduce, timed", "pkb/1_all_reduce", CORRECT_ALL_REDUCE, True, "passed"),
        ("constant cheat, constant-input all-reduce", "pkb/1_all_reduce", CONSTANT_CHEAT, False, "wrong_output"),
        ("replication-aware matmul", "pkb/3_matmul_all_reduce", REPLICATION_AWARE_MATMUL, False, "passed"),
        ("reference that refuses random values", "pkb/4_expert_split_by_counts", split_ref, False, "passed"),
        ("GPU-only reference: cheat", "pkb/5_cuda_stream_all_reduce", CONSTANT_CHEAT, False, "wrong_output"),
        ("GPU-only reference: correct, timed", "pkb/5_cuda_stream_all_reduce", CORRECT_ALL_REDUCE, True, "passed"),
    ]
    rows = []
    failures = 0
    for label, problem_id, source, timed, expected in cases:
        t0 = time.monotonic()
        doc = evaluate(
            EvalSpec(
                problem_id=problem_id, solution_source=source, profile=args.profile, measure_timing=timed, trials=5
            )
        )
        wall = time.monotonic() - t0
        ok = doc["verdict"] == expected
        failures += not ok
        timing = doc.get("timing") or {}
        rows.append(
            {
                "case": label,
                "problem": problem_id,
                "verdict": doc["verdict"],
                "expected": expected,
                "ok": ok,
                "inputs": doc["problem"].get("inputs"),
                "decision": doc["problem"].get("inputs_decision"),
                "message": doc.get("message"),
                "speedup": timing.get("speedup"),
                "phases": doc.get("phases"),
                "wall_s": round(wall, 1),
                "environment": doc.get("environment"),
            }
        )
        lines.append(
            f"{'ok ' if ok else 'BAD'} {label:45s} {doc['verdict']:13s} inputs={doc['problem'].get('inputs')}"
            f"  wall {wall:.1f} s" + (f"  speedup {timing['speedup']:.3f}" if timing else "")
        )
        lines.append(f"      {doc['problem'].get('inputs_decision')} | {doc.get('message', '')[:200]}")
    (out / "pkb_gpu_check.json").write_text(json.dumps(rows, indent=2, default=str))
    (out / "pkb_gpu_check.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
