"""`arena check-problem`: what can be proved about a problem on CPU (evaluator.checks.catalogue_check.local_check): the
reference against its oracle at every declared world size and node grouping, every known answer's verdict, the bench
preset's roofline and memory on every GPU profile, and the roofline's link bytes against the reference's own."""

from __future__ import annotations

import argparse


def cmd_check_problem(args: argparse.Namespace) -> int:
    from problems.registry import get

    problem = get(args.problem)
    sizes = tuple(args.world_size) if args.world_size else None
    if args.solution:
        return _check_solution(problem, sizes, args.solution)
    from evaluator.checks.catalogue_check import local_check

    lines = local_check(
        problem, sizes, known_answers=not args.no_known_answers, bench=not args.no_bench, traffic=not args.no_traffic
    )
    if not lines:
        print(f"{args.problem}: nothing to check (world sizes {list(problem.world_sizes)}, asked {list(sizes or [])})")
        return 1
    for line in lines:
        print(f"  {'ok' if line.ok else 'FAILED':<6} {line.what} {line.where}: {line.verdict}, {line.detail}")
    failed = [line for line in lines if not line.ok]
    print(
        f"{args.problem}: {len(lines) - len(failed)} of {len(lines)} checks as they must be"
        + (f"; {len(failed)} FAILED" if failed else "")
    )
    return 1 if failed else 0


def _check_solution(problem, sizes: tuple[int, ...] | None, path: str) -> int:
    """One solution file against the oracle at every requested (or declared) world size and node grouping."""
    from evaluator.checks.catalogue_check import check_cases, describe_case, with_small
    from evaluator.checks.selfcheck import check_problem

    failed = False
    for w, overrides in check_cases(problem, sizes):
        report = check_problem(with_small(problem, overrides), w, solution_path=path)
        print(f"{problem.id} {describe_case(problem, w, overrides)}: {'ok' if report.ok else 'FAILED'}")
        for e in report.errors:
            print(f"  {e}")
        failed = failed or not report.ok
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    ck = sub.add_parser(
        "check-problem", help="prove a problem right on CPU: reference, known answers, bench preset, roofline"
    )
    ck.add_argument("problem")
    ck.add_argument(
        "--world-size",
        type=int,
        nargs="+",
        default=None,
        help="only these of the problem's world sizes (default: every one it declares)",
    )
    ck.add_argument("--solution", default=None, help="check only this solution file against the oracle")
    ck.add_argument("--no-known-answers", action="store_true", help="do not run solutions/correct and wrong")
    ck.add_argument("--no-bench", action="store_true", help="skip the bench preset's roofline and memory checks")
    ck.add_argument("--no-traffic", action="store_true", help="skip counting the reference's link bytes")
    ck.set_defaults(func=cmd_check_problem)
