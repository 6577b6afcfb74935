"""`arena eval`: evaluate a solution on this machine, with no portal."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluator.contract.profiles import DEFAULT_PROFILE, PROFILES
from evaluator.contract.spec import EvalSpec


def _timed(doc: dict[str, Any]) -> bool:
    """Whether the document's figures are speed measurements: not on a CPU profile (gloo on one host), whose
    timings only check the pipeline; the site says "not computed" there for speedups and roofline fractions."""
    profile = doc.get("profile")
    if isinstance(profile, dict) and profile.get("device") == "cpu":
        return False
    name = profile.get("name") if isinstance(profile, dict) else None
    return not (isinstance(name, str) and name in PROFILES and PROFILES[name].device == "cpu")


def print_result(doc: dict[str, Any]) -> None:
    """A result document as lines: the verdict and message, the host times, the speedup and the roofline fractions
    (said not computed on a CPU profile, as on the site: the times stay, as recorded), the traceback."""
    timed = _timed(doc)
    print(f"verdict: {doc['verdict']}")
    if doc.get("message"):
        print(f"  {doc['message']}")
    if doc.get("failed_ranks"):
        print(f"  failed ranks: {', '.join(map(str, doc['failed_ranks']))}")
    timing = doc.get("timing")
    if timing:
        b, s = timing["baseline"], timing["solution"]
        print(f"timing ({timing['method']}, {timing['iterations']} iterations):")
        print(f"  baseline  median {b['median_us']:10.2f} µs  p10 {b['p10_us']:10.2f}  p90 {b['p90_us']:10.2f}")
        print(f"  solution  median {s['median_us']:10.2f} µs  p10 {s['p10_us']:10.2f}  p90 {s['p90_us']:10.2f}")
        if not timed:
            print("  speedup   not computed: a CPU profile's times only check the pipeline (--json has the raw ratio)")
        elif timing.get("speedup") is not None:
            print(
                f"  speedup   {timing['speedup']:.3f} ± {timing['speedup_uncertainty']:.3f} "
                f"(95% CI {timing['speedup_ci'][0]:.3f}–{timing['speedup_ci'][1]:.3f})"
            )
        graph = timing.get("graph") or {}
        if timed and graph.get("baseline"):
            print(
                f"  graph     baseline {graph['baseline']['median_us']:.2f} µs, solution "
                f"{graph['solution']['median_us']:.2f} µs, speedup {graph['speedup']:.3f}"
            )
    roof = doc.get("roofline")
    if roof and not timed:
        print("roofline: fractions not computed on a CPU profile")
    elif roof:
        print(
            f"roofline: {roof['time_us']:.2f} µs ({roof['bound']}-bound); baseline reaches "
            f"{roof['baseline_fraction']:.1%}, solution {roof['solution_fraction']:.1%}"
        )
    if doc.get("traceback"):
        print(doc["traceback"].rstrip())


def missing_gpus(profile: str) -> str | None:
    """Why this machine cannot evaluate on ``profile``: a GPU profile needs as many CUDA devices as its ranks, here.
    None when it can (every CPU profile can). Said before anything starts, instead of an infra_error naming torch's
    internals ("module 'torch._C' has no attribute '_cuda_setDevice'")."""
    found = PROFILES.get(profile)
    if found is None or found.device != "cuda":
        return None
    import torch

    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if have >= found.world_size:
        return None
    return (
        f"{profile} runs {found.world_size} ranks, one per CUDA GPU; this "
        f"machine has {have or 'no'} CUDA GPU{'' if have == 1 else 's'} that torch {torch.__version__} can use. "
        f"Run this on a GPU host of that profile, send it there with `arena test`/`arena submit --hardware "
        f"{profile}`, or evaluate here on CPU with --hardware cpu-gloo-2"
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from evaluator.suites.installed import evaluate  # resolves the spec, dispatches it to the host or to its suite

    path = Path(args.solution)
    if not path.is_file():
        print(f"arena: no such solution file: {path}", file=sys.stderr)
        return 2
    why = missing_gpus(args.hardware)
    if why:
        print(f"arena eval: {why}", file=sys.stderr)
        return 2
    spec = EvalSpec(
        problem_id=args.problem,
        solution_source=path.read_text(),
        profile=args.hardware,
        solution_name=path.name,
        trials=args.trials,
        seed=args.seed,
        measure_timing=not args.no_timing,
        timing_iterations=args.iterations,
    )
    try:
        doc = evaluate(spec)
    except ValueError as exc:  # unknown problem or profile: the user's mistake, said plainly
        print(f"arena: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        print_result(doc)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="evaluate a solution locally, no portal needed")
    ev.add_argument("--problem", required=True, help="problem id, e.g. collectives/all_reduce")
    ev.add_argument("--solution", required=True, help="path to the solution .py file")
    ev.add_argument("--hardware", default=DEFAULT_PROFILE, choices=sorted(PROFILES), help="hardware profile")
    ev.add_argument("--trials", type=int, default=5, help="correctness trials of fresh random inputs")
    ev.add_argument("--iterations", type=int, default=None, help="timed iterations (default per profile)")
    ev.add_argument("--seed", type=int, default=None, help="pin the seeds (for reproducing a failure)")
    ev.add_argument("--no-timing", action="store_true", help="check correctness only")
    ev.add_argument("--json", action="store_true", help="print the whole result document as JSON")
    ev.set_defaults(func=cmd_eval)
