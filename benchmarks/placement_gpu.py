"""Does where a small call's buffers lie set its time? Writes figures to OUTDIR.

  python benchmarks/placement_gpu.py OUTDIR [--placements 16] [--iterations 60]

Identical code on the bench all-reduce (16 MiB of bfloat16, about 9 µs a call on one H200) has read 0.98-1.03 from one
warm evaluation to the next, each with an interval that excludes 1, while calls with real GPU work read 1.00. One
explanation: each process's buffers keep the device addresses they got at the first call for the whole evaluation,
and a call this small, whose inputs sit in the L2 cache when it starts, runs faster or slower by where they lie.

This probe times the bench all-reduce's call (a clone of the input: an all-reduce over one rank moves nothing) the
way the engine does (spin, L2 flush, inputs filled from a staging buffer, start event, call, stop event) for several
placements: between placements every cached block is given back and a pad of random size is allocated first, so the
call's input and output land elsewhere in device memory. If placement sets the time, the medians of the placements
spread far wider than each median's own interval. Orders:
- ``fill_last``: the engine's order (spin, flush, fill, start): the inputs are in L2 when the call starts;
- ``flush_last``: spin, fill, flush, start: the inputs come from memory;
- ``moved_each_call``: the engine's order, with a pad of random size allocated before each call's input and output
  and held through the call, so every call finds its buffers somewhere new.
NVLink multicast stays off (one process, no communicator)."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402

os.environ.update(MULTICAST_OFF)

NUMEL = 8_388_608  # the bench preset of collectives/all_reduce, bfloat16
FLUSH_BYTES = 256 << 20
SPIN_CYCLES = 400_000  # a few hundred µs, like the engine's spin


def median_interval(values: list[float], rounds: int = 400, seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval of the median."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def run(order: str, placements: int, iterations: int, seed: int) -> list[dict]:
    import torch

    rng = random.Random(seed)
    dev = torch.device("cuda", 0)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=dev)
    staging = torch.randn(NUMEL, dtype=torch.bfloat16, device=dev)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rows = []
    for p in range(placements):
        torch.cuda.empty_cache()
        pad = torch.empty(rng.randrange(1, 64) << 20, dtype=torch.uint8, device=dev)
        x = torch.empty(NUMEL, dtype=torch.bfloat16, device=dev)
        samples = []
        for _ in range(iterations + 5):
            held = None
            if order == "moved_each_call":
                held = torch.empty(rng.randrange(1, 1 << 14) << 12, dtype=torch.uint8, device=dev)
                x = torch.empty(NUMEL, dtype=torch.bfloat16, device=dev)
            torch.cuda._sleep(SPIN_CYCLES)
            if order == "flush_last":
                x.copy_(staging)
                flush.zero_()
            else:
                flush.zero_()
                x.copy_(staging)
            start.record()
            out = x.clone()
            stop.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(stop) * 1000.0)
            del out, held
        samples = samples[5:]
        lo, hi = median_interval(samples, seed=p)
        rows.append(
            {
                "placement": p,
                "pad_mib": pad.numel() >> 20,
                "input_ptr_mod_2mib": x.data_ptr() % (2 << 20),
                "median_us": round(statistics.median(samples), 3),
                "median_ci_us": [round(lo, 3), round(hi, 3)],
            }
        )
        del pad, x
    return rows


def summary(rows: list[dict]) -> dict:
    meds = [r["median_us"] for r in rows]
    widths = [r["median_ci_us"][1] - r["median_ci_us"][0] for r in rows]
    mid = statistics.median(meds)
    return {
        "median_of_medians_us": round(mid, 3),
        "placements_min_max_over_median": [round(min(meds) / mid, 4), round(max(meds) / mid, 4)],
        "median_interval_width_over_median": round(statistics.median(widths) / mid, 4),
        # What identical code would read if each side kept one placement: every pair of placements' ratio.
        "pair_ratios_min_max": [round(min(meds) / max(meds), 4), round(max(meds) / min(meds), 4)],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--placements", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=60)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no GPU: nothing to measure")
        return 0
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python benchmarks/placement_gpu.py OUTDIR --placements {args.placements} "
        f"--iterations {args.iterations}",
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "orders": {},
    }
    for i, order in enumerate(("fill_last", "flush_last", "moved_each_call")):
        rows = run(order, args.placements, args.iterations, seed=i)
        report["orders"][order] = {"summary": summary(rows), "placements": rows}
        print(order, json.dumps(report["orders"][order]["summary"]))
    (out / "placement_gpu.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
