"""`arena problems`: the catalogue."""

from __future__ import annotations

import argparse


def cmd_problems(args: argparse.Namespace) -> int:
    from problems.registry import catalogue

    for problem in catalogue().values():
        sizes = ",".join(map(str, problem.world_sizes))
        print(f"{problem.id:50s} v{problem.version}  W={sizes:8s} {problem.title}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser("problems", help="list the problem catalogue")
    pr.set_defaults(func=cmd_problems)
