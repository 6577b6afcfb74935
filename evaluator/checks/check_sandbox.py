"""The first process of a proposal check's sandbox: ``python -m evaluator.checks.check_sandbox FOLDER`` drops to the
sandbox's uid and runs the proposed folder's code (``evaluator.checks.problem_check.produce``: the contributor's oracle,
reference and known answers, in this process and its forked ranks), writing only their outputs, as data, to the
exchange folder's ``out/``. It decides nothing: the host compares those outputs and writes the report
(``evaluator.checks.problem_check.judge``). Nothing of the portal is in view: no database, no settings, no secrets, no
network but loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _drop_privileges() -> None:
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(int(os.environ["ARENA_SANDBOX_GID"]))
        os.setuid(int(os.environ["ARENA_SANDBOX_UID"]))
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("the sandbox could not drop root")


def main() -> int:
    _drop_privileges()
    os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
    from evaluator.checks.problem_check import produce

    produce(Path(sys.argv[1]), Path(os.environ.get("ARENA_IO", "/io")) / "out")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
