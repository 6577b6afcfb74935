"""Measures the GPU evaluator itself on an NVLink machine and writes the figures to OUTDIR.

  python benchmarks/gpu_evaluator.py OUTDIR [--quick] [--parts repeat,sweep,wall] [--profile h200-nvlink-4]
                                            [--sweep-profiles h200-nvlink-4,h200-nvlink-2]

1. Repeatability: a solution identical to the baseline, five separate evaluations on each of
   collectives/all_reduce, collectives/all_gather and tensor-parallel/all_gather_matmul (on --profile).
2. PyTorch symmetric-memory one-shot all-reduce against NCCL, bf16, 4 KiB to 16 MiB, on each --sweep-profiles.
3. Wall time of one evaluation from launch to result: a load_inline solution with a cold and a warm build cache,
   and a plain PyTorch solution.
4. Roofline fractions of baseline and solution, carried in every row.
NVLink multicast stays off in every process (the evaluator sets it for every rank it starts).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402  (no torch import: set before torch loads)

os.environ.update(MULTICAST_OFF)

from evaluator.host.evaluate import evaluate  # noqa: E402
from evaluator.contract.spec import EvalSpec  # noqa: E402
from problems.registry import get  # noqa: E402

SOLUTIONS = ROOT / "benchmarks" / "solutions"
SWEEP = {"4KiB": 2048, "64KiB": 32768, "1MiB": 524288, "2MiB": 1048576, "16MiB": 8388608}


def row(doc: dict, wall: float, **extra) -> dict:
    t = doc.get("timing") or {}
    g = (t.get("graph") or {}) if t else {}
    r = doc.get("roofline") or {}
    out = {
        **extra,
        "verdict": doc["verdict"],
        "message": doc["message"][:300],
        "wall_s": round(wall, 2),
        "phases": doc.get("phases"),
        "baseline_us": t.get("baseline", {}).get("median_us"),
        "solution_us": t.get("solution", {}).get("median_us"),
        "baseline_p10_p90": [t["baseline"]["p10_us"], t["baseline"]["p90_us"]] if t else None,
        "solution_p10_p90": [t["solution"]["p10_us"], t["solution"]["p90_us"]] if t else None,
        "speedup": t.get("speedup"),
        "speedup_ci": t.get("speedup_ci"),
        "launch_cpu_us": t.get("launch_cpu_us"),
        "spin_us": t.get("spin_us"),
        "graph_baseline_us": g.get("baseline", {}).get("median_us") if g.get("baseline") else None,
        "graph_solution_us": g.get("solution", {}).get("median_us") if g.get("baseline") else None,
        "graph_speedup": g.get("speedup"),
        "graph_reason": g.get("reason"),
        "roofline_us": r.get("time_us"),
        "roofline_bound": r.get("bound"),
        "baseline_roofline_fraction": r.get("baseline_fraction"),
        "solution_roofline_fraction": r.get("solution_fraction"),
    }
    return out


def one(problem: str, source: str, profile: str, name: str, params: dict | None = None) -> tuple[dict, float]:
    started = time.monotonic()
    doc = evaluate(
        EvalSpec(problem_id=problem, solution_source=source, profile=profile, solution_name=name, params=params)
    )
    wall = time.monotonic() - started
    if doc["verdict"] != "passed":
        print(json.dumps({k: doc[k] for k in ("verdict", "message", "failed_ranks")}), flush=True)
        for rank, log in (doc.get("logs") or {}).items():
            print(f"--- {rank}\n{log[-3000:]}", flush=True)
    return doc, wall


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--quick", action="store_true", help="one evaluation of each kind, to smoke-test")
    parser.add_argument("--parts", default="repeat,sweep,wall")
    parser.add_argument("--profile", default="h200-nvlink-4", help="the profile of the repeat and wall parts")
    parser.add_argument("--sweep-profiles", default="h200-nvlink-4,h200-nvlink-2")
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    results: dict = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "rows": {}}
    try:
        results["nvidia_smi_topo"] = subprocess.run(
            ["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30
        ).stdout
    except Exception as exc:  # the figures still stand without the topology dump
        results["nvidia_smi_topo"] = f"unavailable: {exc}"
    repeats = 1 if args.quick else 5

    def save() -> None:
        (out / "gpu_evaluator.json").write_text(json.dumps(results, indent=1, default=str))

    if "repeat" in parts:
        rows = results["rows"].setdefault("identical_to_baseline", [])
        for pid in ("collectives/all_reduce", "collectives/all_gather", "tensor-parallel/all_gather_matmul"):
            source = get(pid).reference_source
            for i in range(repeats):
                doc, wall = one(pid, source, args.profile, "identical.py")
                rows.append(
                    row(doc, wall, problem=pid, profile=args.profile, run=i, environment=doc.get("environment"))
                )
                print(json.dumps(rows[-1]), flush=True)
                save()
    if "sweep" in parts:
        rows = results["rows"].setdefault("symm_mem_one_shot_vs_nccl", [])
        source = (SOLUTIONS / "symm_mem_one_shot_all_reduce.py").read_text()
        for profile in args.sweep_profiles.split(","):
            for label, numel in SWEEP.items():
                if args.quick and label not in ("4KiB", "16MiB"):
                    continue
                doc, wall = one("collectives/all_reduce", source, profile, "symm_mem.py", {"numel": numel})
                rows.append(row(doc, wall, profile=profile, size=label, numel=numel))
                print(json.dumps(rows[-1]), flush=True)
                save()
    if "wall" in parts:
        rows = results["rows"].setdefault("wall_time", [])
        cache = Path(tempfile.mkdtemp(prefix="arena-cache-"))
        os.environ["ARENA_CACHE_DIR"] = str(cache)
        source = (SOLUTIONS / "load_inline_copy_then_nccl.py").read_text()
        for state in ("cold", "warm"):
            doc, wall = one("collectives/all_reduce", source, args.profile, "load_inline.py")
            rows.append(row(doc, wall, solution="load_inline", cache=state))
            print(json.dumps(rows[-1]), flush=True)
            save()
        shutil.rmtree(cache, ignore_errors=True)
        doc, wall = one(
            "collectives/all_reduce", get("collectives/all_reduce").reference_source, args.profile, "plain.py"
        )
        rows.append(row(doc, wall, solution="plain pytorch", cache="n/a"))
        print(json.dumps(rows[-1]), flush=True)
        save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
