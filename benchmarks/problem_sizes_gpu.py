"""Every built-in problem's reference at one rank, at its bench size, on one GPU: its time per call and its peak
memory, so the bench sizes are shown measurable and within a GPU (what one GPU can show; the multi-GPU figures come
from evaluations).

    .venv/bin/python benchmarks/problem_sizes_gpu.py OUTDIR [--iters 10] [--timeout-s 300] [--batch 8] [PROBLEM ...]

Writes OUTDIR/<category>__<name>.json per problem and OUTDIR/summary.json and OUTDIR/summary.md for all. Problems run
in batches of ``--batch``, each batch in a process of its own (a one-rank NCCL group, NVLink multicast off), one
problem after another with the memory freed and the peak reset between them; a batch that dies is run again one
problem per process, so the failure is named. Problems that take ``ranks_per_node`` run with one rank per node (one
rank is one node). Without a GPU it prints why and exits 0 having written nothing.

Per problem: ``time_ms`` (median over ``--iters`` calls after two warm-ups, CUDA events around each call, inputs
made before), ``peak_gib`` (torch.cuda.max_memory_allocated over input making and every call), ``inputs_gib``
(one rank's inputs), ``roofline_us`` on the one-rank smoke profile (HBM and compute only), or ``error``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMOKE_PROFILE = "h200-smoke-1"


def measure(problem_id: str, iters: int) -> dict[str, Any]:
    """Runs in a child process, inside its one-rank process group: one problem's reference on cuda:0."""
    import torch

    from evaluator.contract.profiles import get_profile
    from evaluator.analysis.roofline import roofline
    from problems.registry import get

    problem = get(problem_id)
    preset = problem.presets["bench"]
    overrides = {"ranks_per_node": 1} if "ranks_per_node" in preset.params else {}
    params = problem.params("bench", overrides)
    device = torch.device("cuda", 0)
    module = problem.load_reference()
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    inputs = module.make_inputs(0, 1, 1234, device, preset.dtype, **params)
    inputs_bytes = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
    samples = []
    for i in range(iters + 2):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        out = module.solution(*inputs)
        stop.record()
        torch.cuda.synchronize(device)
        del out
        if i >= 2:  # two warm-ups: first-call allocations, cuBLAS handles, NCCL's first launch
            samples.append(start.elapsed_time(stop))
    peak = torch.cuda.max_memory_allocated(device)
    del inputs
    result = roofline(problem, get_profile(SMOKE_PROFILE, allow_smoke=True), 1, overrides or None)
    return {
        "problem": problem_id,
        "params": params,
        "time_ms": statistics.median(samples),
        "time_ms_min": min(samples),
        "time_ms_max": max(samples),
        "peak_gib": peak / 2**30,
        "inputs_gib": inputs_bytes / 2**30,
        "roofline_us": result["time_us"],
        "roofline_bound": result["bound"],
        "gpu": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
    }


def _child(problem_ids: list[str], out: Path, iters: int) -> None:
    """Measures the problems one after another in one process and one process group: the interpreter's, CUDA's and
    NCCL's start-up are paid once per batch, and each problem's peak is counted from its own start."""
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("nccl", init_method=f"file://{tmp}/store", rank=0, world_size=1, device_id=device)
        try:
            for problem_id in problem_ids:
                try:
                    row = measure(problem_id, iters)
                except Exception as exc:  # noqa: BLE001 - recorded per problem; the batch goes on
                    row = {"problem": problem_id, "error": f"{type(exc).__name__}: {exc}"[:2000]}
                (out / _file_name(problem_id)).write_text(json.dumps(row, indent=1))
        finally:
            dist.destroy_process_group()


def _file_name(problem_id: str) -> str:
    return problem_id.replace("/", "__") + ".json"


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| problem | time (ms) | peak (GiB) | inputs (GiB) | roofline at 1 rank (us) | note |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| `{r['problem']}` | | | | | {r['error'][:120].replace('|', '/')} |")
        else:
            lines.append(
                f"| `{r['problem']}` | {r['time_ms']:.3f} | {r['peak_gib']:.2f} | {r['inputs_gib']:.2f} | "
                f"{r['roofline_us']:.1f} ({r['roofline_bound']}) | |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("problems", nargs="*", help="problem ids (default: every built-in problem)")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per problem")
    parser.add_argument("--batch", type=int, default=8, help="problems measured in one process")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child.split(","), args.outdir, args.iters)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("problem_sizes_gpu: no CUDA device here; nothing measured, nothing written.")
        return 0
    from evaluator.contract.profiles import MULTICAST_OFF
    from problems.registry import discover

    args.outdir.mkdir(parents=True, exist_ok=True)
    ids = args.problems or sorted(discover())
    env = {**os.environ, **MULTICAST_OFF, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}

    def run(batch: list[str]) -> str:
        command = [sys.executable, str(Path(__file__).resolve()), str(args.outdir), "--child", ",".join(batch)]
        command += ["--iters", str(args.iters)]
        try:
            done = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout_s * len(batch)
            )
        except subprocess.TimeoutExpired:
            return f"timeout after {args.timeout_s * len(batch):.0f} s"
        return f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"

    rows = []
    for at in range(0, len(ids), args.batch):
        batch, began = ids[at : at + args.batch], time.monotonic()
        why = run(batch)
        missing = [p for p in batch if not (args.outdir / _file_name(p)).exists()]
        for problem_id in missing if len(batch) > 1 else ():  # a crash took the batch: each alone, to name it
            why = run([problem_id])
        for problem_id in batch:
            path = args.outdir / _file_name(problem_id)
            if not path.exists():
                path.write_text(json.dumps({"problem": problem_id, "error": why}, indent=1))
            row = json.loads(path.read_text())
            rows.append(row)
            shown = row.get("error", "")[:90] or (
                f"{row['time_ms']:9.3f} ms  peak {row['peak_gib']:7.2f} GiB  inputs {row['inputs_gib']:6.2f} GiB"
            )
            print(f"{problem_id:50} {shown}", flush=True)
        print(f"batch of {len(batch)}: {time.monotonic() - began:.0f} s", flush=True)
    (args.outdir / "summary.json").write_text(json.dumps(rows, indent=1))
    (args.outdir / "summary.md").write_text(_markdown(rows))
    failed = sum(1 for r in rows if "error" in r)
    print(f"{len(rows) - failed} measured, {failed} failed; {args.outdir / 'summary.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
