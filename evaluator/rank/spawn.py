"""A sandbox's first process: ``python -m evaluator.rank.spawn FDS REPORT_FD [MODULE LOG]`` drops to the sandbox's
uid, imports MODULE (default: the solution's rank worker), waits for the host's word when started ahead of its
evaluation (ARENA_HOLD_FD), and forks one process per rank, each with only the
descriptors the host opened for it (commands, reports and, for the solution's ranks, the timer), its place among the
nodes and its output in LOG (``{r}`` is the rank; default: that rank's log in the exchange folder); then it tells the
host how each rank ended. The judge's sandbox runs the judge's ranks through it too."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import traceback
from pathlib import Path

from evaluator import wire


def _drop_privileges() -> None:
    os.setgroups([])
    os.setgid(int(os.environ["ARENA_SANDBOX_GID"]))
    os.setuid(int(os.environ["ARENA_SANDBOX_UID"]))
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("the sandbox could not drop root")


def rank_name(r: int) -> str:
    """The name a rank's process carries (/proc/PID/comm), by which the host tells the ranks from other processes."""
    return f"arena-rank-{r}"


def _name_self(name: str) -> None:
    # prctl(PR_SET_NAME): /proc/self/comm is not writable once the process has changed uid.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(15, name.encode()[:15], 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME) failed")


def _become_rank(r: int, fds: list[int], log_fd: int, others: set[int], node: dict[str, str], module) -> None:
    """In the forked child: this rank's descriptors only, its log as stdout and stderr, its place among the nodes;
    then the module's ``main``. Never returns."""
    code = 1
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd in others:  # the other ranks' channels and the exit reports are not this rank's to touch
            os.close(fd)
        os.environ.pop("ARENA_NODES", None)
        os.environ.update(node)
        _name_self(rank_name(r))
        sys.argv = [module.__file__, str(r), *map(str, fds)]  # as ``python -m MODULE RANK FD...`` would have it
        code = int(module.main(sys.argv) or 0)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        # os._exit: nothing the solution registered with atexit runs, and no rank lingers on a broken collective.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main() -> int:
    _drop_privileges()
    os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
    ranks = json.loads(sys.argv[1])
    report_fd = int(sys.argv[2])
    nodes = json.loads(os.environ.get("ARENA_NODES", "[]"))
    module_name = sys.argv[3] if len(sys.argv) > 3 else "evaluator.rank.worker"
    logs = sys.argv[4] if len(sys.argv) > 4 else str(Path(os.environ.get("ARENA_IO", "/io")) / "r{r}" / "log.txt")
    # Imported once here, torch with it, and forked into every rank: one interpreter's start-up per sandbox, not
    # one per rank. Nothing here touches a GPU, so each rank sets up CUDA and its communicators on its own.
    module = importlib.import_module(module_name)
    wire.send(report_fd, "imported")
    sys.stdout.flush()
    sys.stderr.flush()
    hold = os.environ.pop("ARENA_HOLD_FD", None)
    if hold is not None:
        # A sandbox started ahead of its evaluation (evaluator/host/pool.py) waits here, torch imported, until the
        # host hands it one; the host closing the descriptor instead means it is not needed.
        with os.fdopen(int(hold), "rb") as go:
            if not go.readline():
                return 0
    every = {fd for fds in ranks for fd in fds} | {report_fd}
    pending: dict[int, int] = {}
    for r, fds in enumerate(ranks):
        # O_CREAT for the judge's logs, made in its own private folder. A solution's rank's log is already there: the
        # host made it (evaluator/host/evaluate.py, _prepare_workdir) in a folder where the sandbox creates nothing.
        log_fd = os.open(logs.replace("{r}", str(r)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        pid = os.fork()
        if pid == 0:
            _become_rank(r, fds, log_fd, every - set(fds), nodes[r] if r < len(nodes) else {}, module)
        os.close(log_fd)
        pending[pid] = r
    for fds in ranks:
        for fd in fds:
            os.close(fd)
    worst = 0
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
    # os._exit: the interpreter's shutdown with torch loaded takes a noticeable part of a second, and nothing here
    # needs it.
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
