"""`arena check-problem`: prove a problem's reference equal to its oracle on CPU."""

from __future__ import annotations

import argparse


def cmd_check_problem(args: argparse.Namespace) -> int:
    from evaluator.selfcheck import check

    failed = False
    for w in args.world_size:
        report = check(args.problem, w, solution_path=args.solution)
        status = "ok" if report.ok else "FAILED"
        print(f"{args.problem} W={w}: {status}")
        for e in report.errors:
            print(f"  {e}")
        failed = failed or not report.ok
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    ck = sub.add_parser("check-problem", help="prove a problem's reference equal to its oracle on CPU")
    ck.add_argument("problem")
    ck.add_argument("--world-size", type=int, nargs="+", default=[2, 4])
    ck.add_argument("--solution", default=None, help="check this solution file against the oracle instead")
    ck.set_defaults(func=cmd_check_problem)
