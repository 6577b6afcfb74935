"""`arena import-pkb`: register a ParallelKernelBench checkout's problems as a suite."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.contract.profiles import PROFILES
from evaluator.suites.pkb import IMPORT_PROFILE


def cmd_import_pkb(args: argparse.Namespace) -> int:
    from evaluator.suites.pkb.importer import import_checkout

    report = import_checkout(
        Path(args.path),
        Path(args.into) if args.into else None,
        probe=not args.no_probe,
        probe_profile=args.probe_profile,
        jobs=args.jobs,
    )
    print(report.summary())
    return 0 if report.ok else 1


def register(sub: argparse._SubParsersAction) -> None:
    ip = sub.add_parser("import-pkb", help="register a ParallelKernelBench checkout's problems as a suite")
    ip.add_argument("path")
    ip.add_argument(
        "--into",
        default=None,
        help="the suite folder to write; its name is the suite's name "
        "(default: $ARENA_SUITES_DIR/pkb, where the catalogue finds it)",
    )
    ip.add_argument(
        "--no-probe",
        action="store_true",
        help="skip the reference-only runs that decide randomized vs original inputs (decided at evaluation)",
    )
    ip.add_argument(
        "--probe-profile",
        default=IMPORT_PROFILE,
        choices=sorted(PROFILES),
        help=f"hardware profile of those runs (default {IMPORT_PROFILE}; a GPU profile on a GPU host)",
    )
    ip.add_argument(
        "--jobs", type=int, default=None, help="problems probed at once (default: half the CPUs, at most 8)"
    )
    ip.set_defaults(func=cmd_import_pkb)
