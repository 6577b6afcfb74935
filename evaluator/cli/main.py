"""The `arena` command: one module per subcommand in this package, each registering its own parser."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from evaluator.cli import check_problem, import_pkb, list_problems, login, prompts, run_eval, submit, testmode


MODULES = (run_eval, list_problems, check_problem, login, submit, testmode, prompts, import_pkb)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="Parallel Kernel Arena: evaluate multi-GPU kernels.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader stopped reading (`arena problems | head`): end quietly, as other command-line tools do. Point
        # stdout at /dev/null so that the interpreter's last flush at exit does not fail on the closed pipe again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
