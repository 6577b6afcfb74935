"""Wall time of one evaluation, launch to result document, under the separated judge: writes figures to OUTDIR.

  python benchmarks/eval_wall.py OUTDIR [--profile cpu-gloo-2] [--runs 5] [--problem collectives/all_reduce]
                                       [--warm-sandboxes] [--between-s 0] [--solution correct|reference|FILE]

A plain correct solution (the first of the problem's solutions/correct; with --solution reference the reference
itself, so both sides run identical code) evaluated --runs times in a row in one worker process (warm: the timer is
built, the runtime staged and the sandbox probed by the first run, as on a worker that has served one job), with each
phase's share and the set-up's timeline. The first run is reported apart (cold). With --warm-sandboxes the next
evaluation's sandboxes are started ahead after each one, outside its wall time (as ArenaWarmWorker does after each
job); --between-s pauses between evaluations, as a worker waits between jobs, which is when those sandboxes import
torch.
Each run's speedup is recorded, to see whether anything running beside an evaluation moved its timings; only with
--solution reference is 1.00 the expected figure (a problem's correct solutions may take another route)."""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402

os.environ.update(MULTICAST_OFF)

from evaluator.contract.spec import EvalSpec  # noqa: E402
from evaluator.host import pool  # noqa: E402
from evaluator.host.evaluate import evaluate, hold_next  # noqa: E402
from problems.registry import get  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--profile", default="cpu-gloo-2")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--problem", default="collectives/all_reduce")
    parser.add_argument(
        "--param", action="append", default=[], help="a size parameter of the preset, NAME=VALUE (repeatable)"
    )
    parser.add_argument(
        "--solution",
        default="correct",
        help="what to evaluate: the first correct solution, the reference itself (identical code on both sides), or "
        "the path of a solution file",
    )
    parser.add_argument(
        "--warm-sandboxes", action="store_true", help="start each evaluation's sandboxes ahead, as ArenaWarmWorker does"
    )
    parser.add_argument(
        "--between-s",
        type=float,
        default=0.0,
        help="pause between evaluations (a worker between jobs; the held sandboxes import meanwhile)",
    )
    parser.add_argument(
        "--window-calls",
        type=int,
        default=1,
        help="at least so many calls to a timed window (EvalSpec.min_window_calls; evaluator/host/batch.py)",
    )
    parser.add_argument(
        "--host-profile",
        action="store_true",
        help="profile the host's side of the last evaluation (cProfile): where its own time goes, written beside",
    )
    args = parser.parse_args()
    if args.warm_sandboxes:
        pool.enable()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    problem = get(args.problem)
    params = {k: int(v) for k, v in (p.split("=", 1) for p in args.param)}
    if args.solution == "reference":
        source, name = problem.reference_source, "reference.py"
    elif args.solution == "correct":
        first = sorted((problem.path / "solutions" / "correct").glob("*.py"))[0]
        source, name = first.read_text(), first.name
    else:
        given = Path(args.solution)
        if not given.is_file():
            parser.error(f"--solution {args.solution}: not 'correct', 'reference' or a solution file")
        source, name = given.read_text(), given.name
    rows = []
    for n in range(args.runs + 1):
        if n:
            time.sleep(args.between_s)
        t = time.monotonic()
        profiler = cProfile.Profile() if args.host_profile and n == args.runs else None
        if profiler is not None:
            profiler.enable()
        doc = evaluate(
            EvalSpec(
                problem_id=args.problem,
                solution_source=source,
                solution_name=name,
                profile=args.profile,
                params=params or None,
                min_window_calls=args.window_calls,
            )
        )
        if profiler is not None:
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(60)
            report = text.getvalue().replace(f"{ROOT}/", "")  # the repository's files by their own paths
            (out / f"eval_wall_host_profile_{args.profile}.txt").write_text(report)
            print(report[:12000])
        rows.append(
            {
                "run": n,
                "cold": n == 0,
                "verdict": doc["verdict"],
                "wall_s": round(time.monotonic() - t, 3),
                "phases": doc.get("phases"),
                "timeline": doc.get("timeline"),
                "started_ahead": (doc.get("containment") or {}).get("started_ahead"),
                "iterations": (doc.get("timing") or {}).get("iterations"),
                "calls_per_window": (doc.get("timing") or {}).get("calls_per_window"),
                "speedup": (doc.get("timing") or {}).get("speedup"),
                "solution_median_us": ((doc.get("timing") or {}).get("solution") or {}).get("median_us"),
                "baseline_median_us": ((doc.get("timing") or {}).get("baseline") or {}).get("median_us"),
                "host_clock": (doc.get("timing") or {}).get("host_clock"),
                "message": doc.get("message", "")[:300],
            }
        )
        if args.warm_sandboxes:
            hold_next()  # as the warm worker does once the job has ended
    warm = [r["wall_s"] for r in rows if not r["cold"]]
    speedups = [r["speedup"] for r in rows if not r["cold"] and r["speedup"] is not None]
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "profile": args.profile,
        "problem": args.problem,
        "solution": name,
        "cpus": os.cpu_count(),
        "command": f"python benchmarks/eval_wall.py OUTDIR --profile {args.profile} --runs {args.runs}"
        + (f" --problem {args.problem}" if args.problem != "collectives/all_reduce" else "")
        + "".join(f" --param {p}" for p in args.param)
        + (f" --solution {args.solution}" if args.solution != "correct" else "")
        + (" --warm-sandboxes" if args.warm_sandboxes else "")
        + (f" --between-s {args.between_s:g}" if args.between_s else "")
        + (f" --window-calls {args.window_calls}" if args.window_calls > 1 else "")
        + (" --host-profile" if args.host_profile else ""),
        "warm_sandboxes": args.warm_sandboxes,
        "between_s": args.between_s,
        "warm_median_s": statistics.median(warm),
        "warm_max_s": max(warm),
        "cold_s": rows[0]["wall_s"],
        "warm_speedups": speedups,
        "runs": rows,
    }
    name = (
        f"eval_wall_{report['date']}_{args.profile}"
        + ("_warm_sandboxes" if args.warm_sandboxes else "")
        + "".join(f"_{p.replace('=', '')}" for p in args.param)
    )
    (out / f"{name}.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
