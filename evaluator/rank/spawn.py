"""A sandbox's first process: ``python -m evaluator.rank.spawn FDS REPORT_FD [MODULE LOG]`` drops to the sandbox's
uid, starts one process per rank of MODULE (default: the solution's rank worker) with the descriptors the host
opened for it (commands, reports and, for the solution's ranks, the timer) and its place among the nodes, sends its
output to LOG (``{r}`` is the rank; default: that rank's log in the exchange folder), and tells the host how each
process ended. The judge's sandbox runs the judge's ranks through it too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator import wire


def _drop_privileges() -> None:
    os.setgroups([])
    os.setgid(int(os.environ["ARENA_SANDBOX_GID"]))
    os.setuid(int(os.environ["ARENA_SANDBOX_UID"]))
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("the sandbox could not drop root")


def main() -> int:
    _drop_privileges()
    os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
    ranks = json.loads(sys.argv[1])
    report_fd = int(sys.argv[2])
    nodes = json.loads(os.environ.get("ARENA_NODES", "[]"))
    module = sys.argv[3] if len(sys.argv) > 3 else "evaluator.rank.worker"
    logs = sys.argv[4] if len(sys.argv) > 4 else str(Path(os.environ.get("ARENA_IO", "/io")) / "r{r}" / "log.txt")
    children = []
    for r, fds in enumerate(ranks):
        env = dict(os.environ)
        env.pop("ARENA_NODES", None)
        if r < len(nodes):
            env.update(nodes[r])
        log = open(logs.replace("{r}", str(r)), "wb")
        children.append(subprocess.Popen(
            [sys.executable, "-m", module, str(r), *map(str, fds)],
            pass_fds=tuple(fds), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env))
        log.close()
    for fds in ranks:
        for fd in fds:
            os.close(fd)
    worst = 0
    pending = {c.pid: r for r, c in enumerate(children)}
    while pending:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid in pending:
            code = os.waitstatus_to_exitcode(status)
            wire.send(report_fd, "exit", rank=pending.pop(pid), code=code)
            worst = worst or code
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
