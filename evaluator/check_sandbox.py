"""The first process of a proposal check's sandbox: ``python -m evaluator.check_sandbox FOLDER`` drops to the
sandbox's uid, checks the proposed folder (``evaluator.problem_check.check_folder``: the contributor's reference and
known answers, in this process and its forked ranks) and writes the report as JSON to the exchange folder. Nothing
of the portal is in view: no database, no settings, no secrets, no network but loopback."""

from __future__ import annotations

import json
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
    from evaluator.problem_check import check_folder, failed_report

    io = Path(os.environ.get("ARENA_IO", "/io"))
    try:
        report = check_folder(Path(sys.argv[1]))
    except BaseException as exc:  # noqa: BLE001 - the contributor's code may raise anything, SystemExit included
        report = failed_report(f"the check raised {type(exc).__name__}: {str(exc)[:1500]}")
    partial = io / "report.json.part"
    partial.write_text(json.dumps(report, default=str))
    os.replace(partial, io / "report.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
