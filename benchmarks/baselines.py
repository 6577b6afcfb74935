"""Times every problem's baseline at its bench size and writes the table (problem, world size, baseline median,
roofline, fraction) to OUTDIR.

  python benchmarks/baselines.py OUTDIR [--profile h200-nvlink-4] [--only PREFIX] [--iterations 30]

Each problem is evaluated through the evaluator itself, with its reference submitted as the solution: the
baseline figure comes from exactly the protocol the leaderboard uses, and the solution column doubles as a
repeatability check (it should read 1.00).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402  (no torch import: set before torch loads)

os.environ.update(MULTICAST_OFF)

from evaluator.contract.profiles import get_profile  # noqa: E402
from evaluator.host.evaluate import evaluate  # noqa: E402
from evaluator.contract.spec import EvalSpec  # noqa: E402
from problems.registry import catalogue  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--profile", default="h200-nvlink-4")
    parser.add_argument("--only", default="", help="only problems whose id starts with this")
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    profile = get_profile(args.profile)
    rows = []
    for pid, problem in catalogue().items():
        if not pid.startswith(args.only) or profile.world_size not in problem.world_sizes:
            continue
        started = time.monotonic()
        doc = evaluate(
            EvalSpec(
                problem_id=pid,
                solution_source=problem.reference_source,
                profile=profile.name,
                solution_name="reference.py",
                trials=2,
                timing_iterations=args.iterations,
            )
        )
        t, r = doc.get("timing") or {}, doc.get("roofline") or {}
        row = {
            "problem": pid,
            "world_size": profile.world_size,
            "verdict": doc["verdict"],
            "message": doc["message"][:300],
            "dtype": problem.presets[profile.preset].dtype,
            "params": doc["problem"].get("params"),
            "baseline_median_us": t.get("baseline", {}).get("median_us"),
            "baseline_p10_us": t.get("baseline", {}).get("p10_us"),
            "baseline_p90_us": t.get("baseline", {}).get("p90_us"),
            "identical_speedup": t.get("speedup"),
            "graph_baseline_us": ((t.get("graph") or {}).get("baseline") or {}).get("median_us"),
            "roofline_us": r.get("time_us"),
            "roofline_bound": r.get("bound"),
            "fraction": r.get("baseline_fraction"),
            "wall_s": round(time.monotonic() - started, 2),
        }
        if doc["verdict"] != "passed":
            row["logs_tail"] = {k: v[-1500:] for k, v in (doc.get("logs") or {}).items()}
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "logs_tail"}), flush=True)
        (out / f"baselines_{profile.name}.json").write_text(
            json.dumps(
                {
                    "date": time.strftime("%Y-%m-%d"),
                    "profile": profile.name,
                    "command": " ".join(sys.argv),
                    "environment": doc.get("environment"),
                    "rows": rows,
                },
                indent=1,
            )
        )
    (out / f"baselines_{profile.name}.md").write_text(table(rows))
    return 0


def table(rows: list[dict]) -> str:
    """The rows as the Markdown table of docs/baselines.md."""
    lines = [
        "| problem | W | dtype | baseline median µs (p10–p90) | roofline µs (bound) | fraction | identical A/B |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["verdict"] != "passed":
            lines.append(
                f"| {row['problem']} | {row['world_size']} | {row['dtype']} | {row['verdict']}: "
                f"{row['message'][:80]} | | | |"
            )
            continue
        lines.append(
            f"| {row['problem']} | {row['world_size']} | {row['dtype']} | {row['baseline_median_us']:.1f} "
            f"({row['baseline_p10_us']:.1f}–{row['baseline_p90_us']:.1f}) | {row['roofline_us']:.1f} "
            f"({row['roofline_bound']}) | {row['fraction']:.3f} | {row['identical_speedup']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
