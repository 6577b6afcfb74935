"""`arena prompts`: a prompt pack as JSONL."""

from __future__ import annotations

import argparse
import sys

from evaluator.contract.profiles import PROFILES


def cmd_prompts(args: argparse.Namespace) -> int:
    """A prompt pack as JSONL on stdout: one line per problem that runs on the profile (or only ``--problem``)."""
    from evaluator import prompts
    from problems.registry import catalogue

    chosen = [p for p in catalogue().values() if not args.problem or p.id in args.problem]
    try:
        rows = prompts.pack(args.backend, args.hardware, chosen)
    except ValueError as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(
            f"arena: no problem runs on {args.hardware}"
            + (f" among {', '.join(args.problem)}" if args.problem else ""),
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(prompts.jsonl(rows))
    print(f"{len(rows)} prompts, pack {rows[0]['pack_version']} ({args.backend} on {args.hardware})", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    pp = sub.add_parser("prompts", help="write a prompt pack (backend × hardware, every problem) as JSONL")
    pp.add_argument("--backend", required=True, help="cuda, triton, symmetric-memory, ... (docs/backends/)")
    pp.add_argument("--hardware", default="h200-nvlink-4", choices=sorted(PROFILES), help="hardware profile")
    pp.add_argument("--problem", action="append", help="only this problem (repeatable)")
    pp.set_defaults(func=cmd_prompts)
