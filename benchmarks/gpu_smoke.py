"""The separated judge and the sandbox on one GPU, with the compiled timer: writes figures to OUTDIR.

  python benchmarks/gpu_smoke.py OUTDIR [--budget-s 480]

On the one-rank smoke profile (h200-smoke-1, never ranked):
1. the sandbox's CUDA view: bubblewrap, the timer's build, the probe;
2. identical-code repeatability: a solution whose body is the reference's own `solution`, five separate evaluations
   each of three problems with real GPU work (GEMMs), speedup and its interval per evaluation;
3. solutions of every backend inside the sandbox: a CUDA load_inline kernel (cold, then warm build cache), a Triton
   kernel, torch.compile (Inductor), PyTorch symmetric memory (one-rank rendezvous and one-shot all-reduce);
4. wall time of each evaluation, launch to result document.
NVLink multicast stays off in every process (the evaluator sets it for every rank it starts)."""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402

os.environ.update(MULTICAST_OFF)

from evaluator import timer as compiled_timer  # noqa: E402
from evaluator.contract.spec import EvalSpec  # noqa: E402
from evaluator.host import sandbox  # noqa: E402
from evaluator.host.evaluate import evaluate  # noqa: E402
from problems.registry import get  # noqa: E402

PROFILE = "h200-smoke-1"
REPEAT = {
    "tensor-parallel/all_gather_matmul": {"S": 4096, "H": 4096, "N": 8192},
    "tensor-parallel/gemm_all_reduce": None,
    "tensor-parallel/tp_mlp": {"T": 2048, "H": 2048, "F": 8192},
}
HONEST = ROOT / "tests" / "evaluator" / "honest"
BACKENDS = {
    "cuda_load_inline": ROOT / "benchmarks" / "solutions" / "load_inline_copy_then_nccl.py",
    "triton": HONEST / "triton_copy.py",
    "inductor": HONEST / "inductor_compiled.py",
    "symmetric_memory": ROOT / "benchmarks" / "solutions" / "symm_mem_one_shot_all_reduce.py",
}


def identical_solution(problem_id: str) -> str:
    """The reference's own imports of torch, its module-level constants and its `solution`, as a standalone file."""
    source = get(problem_id).reference_source
    tree = ast.parse(source)
    keep = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and not (isinstance(n, ast.ImportFrom) and (n.module or "").startswith("problems"))
    ]
    # Constants the solution reads (EPS = 1e-5, say): plain assignments of literals, nothing that runs code.
    keep += [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Constant)]
    keep += [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"]
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) + "\n"


def row(doc: dict, wall: float, **extra) -> dict:
    t = doc.get("timing") or {}
    return {
        **extra,
        "verdict": doc["verdict"],
        "message": doc["message"][:300],
        "wall_s": round(wall, 2),
        "speedup": t.get("speedup"),
        "speedup_ci": t.get("speedup_ci"),
        "baseline_median_us": (t.get("baseline") or {}).get("median_us"),
        "solution_median_us": (t.get("solution") or {}).get("median_us"),
        "host_clock": t.get("host_clock"),
        "phases": doc.get("phases"),
        "gpus": (doc.get("environment") or {}).get("gpus"),
        "containment": doc.get("containment"),
        "logs": {k: v[-1500:] for k, v in (doc.get("logs") or {}).items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--parts", default="repeat,backends", help="which parts to run (repeat, backends)")
    parser.add_argument("--problems", default=",".join(REPEAT), help="problems of the repeatability part")
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "command": "python benchmarks/gpu_smoke.py OUTDIR",
        "profile": PROFILE,
        "python": platform.python_version(),
        "environment": {},
    }
    try:
        import torch

        report["environment"] = {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        }
    except Exception as exc:  # noqa: BLE001
        report["environment"] = {"error": str(exc)}
    report["bwrap"] = (
        subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
        if shutil.which("bwrap")
        else None
    )
    t0 = time.monotonic()
    try:
        report["timer"] = {"path": compiled_timer.build().name, "build_s": round(time.monotonic() - t0, 2)}
    except Exception as exc:  # noqa: BLE001
        report["timer"] = {"error": str(exc)}
    report["sandbox_probe"] = sandbox.probe("cuda") or "ok"
    report["repeatability"] = []
    report["backends"] = []
    (out / "gpu_smoke.json").write_text(json.dumps(report, indent=1))
    parts = set(args.parts.split(","))
    for problem_id, params in REPEAT.items():
        if "repeat" not in parts or problem_id not in args.problems.split(","):
            continue
        source = identical_solution(problem_id)
        for n in range(5):
            if time.monotonic() - started > args.budget_s:
                break
            t = time.monotonic()
            doc = evaluate(
                EvalSpec(
                    problem_id=problem_id,
                    solution_source=source,
                    profile=PROFILE,
                    params=params,
                    timing_iterations=50,
                    warmup_iterations=5,
                )
            )
            report["repeatability"].append(row(doc, time.monotonic() - t, problem=problem_id, run=n, params=params))
            if doc["verdict"] != "passed" and n == 0:
                print(json.dumps(report["repeatability"][-1], indent=1)[:6000])
            (out / "gpu_smoke.json").write_text(json.dumps(report, indent=1))
    for name, path in BACKENDS.items() if "backends" in parts else ():
        for attempt in ("cold", "warm") if name == "cuda_load_inline" else ("first",):
            if time.monotonic() - started > args.budget_s:
                break
            t = time.monotonic()
            doc = evaluate(
                EvalSpec(
                    problem_id="collectives/all_reduce",
                    solution_source=path.read_text(),
                    solution_name=path.name,
                    profile=PROFILE,
                    timing_iterations=50,
                    warmup_iterations=5,
                    params={"numel": 1 << 20},
                )
            )
            report["backends"].append(
                row(
                    doc,
                    time.monotonic() - t,
                    backend=name,
                    attempt=attempt,
                    log=(doc.get("logs") or {}).get("rank0", "")[-1500:],
                    traceback=doc.get("traceback", "")[-1500:],
                )
            )
            (out / "gpu_smoke.json").write_text(json.dumps(report, indent=1))
    lines = [
        f"# One-GPU smoke of the separated judge ({report['date']})",
        "",
        f"`{report['command']}` on {report['environment'].get('gpu')}, torch {report['environment'].get('torch')},"
        f" Python {report['python']}, {report['bwrap']}; timer built in {report['timer']}; probe: "
        f"{report['sandbox_probe']}",
        "",
        "| problem | run | verdict | speedup | 95% CI | baseline µs | solution µs | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["repeatability"]:
        ci = r["speedup_ci"] or [None, None]
        lines.append(
            f"| {r['problem']} | {r['run']} | {r['verdict']} | {r['speedup']} | {ci} | "
            f"{r['baseline_median_us']} | {r['solution_median_us']} | {r['wall_s']} |"
        )
    lines += ["", "| backend | attempt | verdict | wall s | message |", "|---|---|---|---|---|"]
    for r in report["backends"]:
        lines.append(f"| {r['backend']} | {r['attempt']} | {r['verdict']} | {r['wall_s']} | {r['message'][:120]} |")
    (out / "gpu_smoke.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
