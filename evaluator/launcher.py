"""Starts the rank processes of one evaluation, holds each phase to its time limit, and collects what the ranks
report through the channel the launcher opened itself.

Each rank runs in a fresh process in its own session (process group), with a scrubbed environment, in a
private working directory, under resource limits and, when the launcher is root, as an unprivileged user
(evaluator.sandbox). When a phase outlives its limit, or a rank dies, every rank's whole process group is killed,
and so is any process a rank started that left its group, so no process (and no GPU memory) outlives the
evaluation.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.channel import ChannelReader
from evaluator.contract.profiles import MULTICAST_OFF
from evaluator.contract.result import trim
from evaluator.sandbox import Containment, become_subreaper, boot_ticks, kill_leftovers

REPO_ROOT = Path(__file__).resolve().parent.parent
# After one rank fails, the others get this long to report their own errors before everything is killed.
FAILURE_GRACE_S = 2.0
# Variables a rank may inherit; everything else (tokens, database URLs, cloud credentials) stays behind.
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
               "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "CC", "CXX", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME",
               "TORCH_CUDA_ARCH_LIST", "VIRTUAL_ENV",
               "ARENA_SUITES_DIR")  # where imported suites live (problems/registry.py), so ranks find them too


@dataclass
class RankState:
    rank: int
    process: subprocess.Popen
    reader: ChannelReader
    log_path: Path
    phase: str = "setup"
    phase_started: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    exit_code: int | None = None
    killed: bool = False  # the launcher killed it (timeout, or another rank failed)


@dataclass
class LaunchOutcome:
    ranks: list[RankState]
    timed_out: list[int]
    timeout_phase: str | None
    channel_error: str | None
    phase_seconds: dict[str, float]
    wall_seconds: float
    containment: dict[str, Any] = field(default_factory=dict)

    def messages(self, kind: str) -> list[dict[str, Any]]:
        return [m for r in self.ranks for m in r.messages if m["kind"] == kind]

    def logs(self) -> dict[str, str]:
        out = {}
        for r in self.ranks:
            try:
                out[f"rank{r.rank}"] = trim(r.log_path.read_text(errors="replace"))
            except OSError:
                out[f"rank{r.rank}"] = ""
        return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_environment(rank: int, world_size: int, port: int, extra: dict[str, str] | None = None,
                     workdir: Path | None = None, containment: Containment | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    if containment is not None and workdir is not None:
        # HOME and TMPDIR inside the working directory; builds cached per solution (by its source hash), so a
        # re-run of the same solution does not rebuild and no solution reads another's build tree.
        env.update(containment.environment(workdir))
    else:
        cache = Path(os.environ.get("ARENA_CACHE_DIR", Path.home() / ".cache" / "arena"))
        env.setdefault("TORCH_EXTENSIONS_DIR", str(cache / "torch_extensions"))
        env.setdefault("TRITON_CACHE_DIR", str(cache / "triton"))
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    env.update(MULTICAST_OFF)
    env.update({
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank), "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world_size), "LOCAL_WORLD_SIZE": str(world_size), "PYTHONPATH": str(REPO_ROOT),
        "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    })
    env.update(extra or {})
    return env


def _kill(states: list[RankState]) -> None:
    for s in states:
        if s.process.poll() is None:
            s.killed = True
            try:
                os.killpg(s.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for s in states:
        try:
            s.exit_code = s.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            s.exit_code = None
        # A rank may have started children in its own process group; they go with it.
        try:
            os.killpg(s.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def launch(workdir: Path, world_size: int, seeds: list[int], timeouts: dict[str, float],
           extra_env: dict[str, str] | None = None, python: str | None = None,
           containment: Containment | None = None) -> LaunchOutcome:
    """Runs ``world_size`` ranks of ``evaluator.rank`` over ``workdir`` and returns what they reported.

    ``containment`` (evaluator.sandbox.plan) says as which user and under which limits the ranks run; the caller
    has already prepared the working directory with it."""
    port = free_port()
    key = secrets.token_bytes(32)
    states: list[RankState] = []
    started = time.monotonic()
    since = boot_ticks()
    if containment is not None:
        containment.subreaper = become_subreaper()
    child_kwargs = containment.popen_kwargs() if containment is not None else {}
    for rank in range(world_size):
        read_fd, write_fd = os.pipe()
        log_path = workdir / f"rank{rank}.log"
        log = open(log_path, "wb")
        process = subprocess.Popen(
            [python or sys.executable, "-m", "evaluator.rank", str(workdir), str(rank), str(write_fd)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            cwd=str(workdir), env=rank_environment(rank, world_size, port, extra_env, workdir, containment),
            start_new_session=True, **child_kwargs,
        )
        log.close()
        os.close(write_fd)
        assert process.stdin is not None
        process.stdin.write((json.dumps({"key": key.hex(), "seeds": seeds}) + "\n").encode())
        process.stdin.close()
        states.append(RankState(rank, process, ChannelReader(read_fd, key, rank), log_path, phase_started=started))

    timed_out: list[int] = []
    timeout_phase: str | None = None
    channel_error: str | None = None
    failed_at: float | None = None
    phase_first_start: dict[str, float] = {"setup": started}
    phase_last_end: dict[str, float] = {}
    try:
        while True:
            open_readers = {s.reader.fd: s for s in states if not s.reader.closed}
            if not open_readers:
                break
            now = time.monotonic()
            deadline = min(s.phase_started + timeouts.get(s.phase, 60.0) for s in states if not s.done)\
                if any(not s.done for s in states) else now + 1
            wait = max(0.0, min(deadline - now, 0.5))
            if failed_at is not None:
                wait = min(wait, max(0.0, failed_at + FAILURE_GRACE_S - now))
            ready, _, _ = select.select(list(open_readers), [], [], wait)
            for fd in ready:
                state = open_readers[fd]
                try:
                    messages = state.reader.read_available()
                except ValueError as exc:
                    channel_error = str(exc)
                    raise _Stop()
                for m in messages:
                    m["at"] = time.monotonic() - started
                    state.messages.append(m)
                    if m["kind"] == "phase":
                        state.phase = m["phase"]
                        state.phase_started = time.monotonic()
                        phase_first_start.setdefault(m["phase"], state.phase_started)
                    elif m["kind"] == "phase_done":
                        phase_last_end[m["phase"]] = time.monotonic()
                    elif m["kind"] == "done":
                        state.done = True
                    elif m["kind"] == "error" and failed_at is None:
                        failed_at = time.monotonic()
            for s in states:
                if s.exit_code is None and s.process.poll() is not None:
                    s.exit_code = s.process.returncode
                    if (s.exit_code != 0 or not s.done) and failed_at is None:
                        failed_at = time.monotonic()
            now = time.monotonic()
            if failed_at is not None and now - failed_at >= FAILURE_GRACE_S:
                break
            late = [s for s in states if not s.done and s.exit_code is None
                    and now - s.phase_started > timeouts.get(s.phase, 60.0)]
            if late:
                timeout_phase = late[0].phase
                timed_out = [s.rank for s in states if not s.done and s.phase == timeout_phase and s.exit_code is None]
                break
            if all(s.done for s in states) and all(s.process.poll() is not None for s in states):
                break
    except _Stop:
        pass
    finally:
        _kill(states)
        if containment is not None and containment.subreaper:
            groups = {s.process.pid for s in states}  # each rank leads its own process group
            leftovers = kill_leftovers(since, groups)
            containment.leftovers_killed = len(leftovers)
            containment.escaped = [f"pid {pid}: {cmd}" for pid, pgid, cmd in leftovers if pgid not in groups]
        for s in states:
            # Drain what a rank wrote before it died: its error message is the most useful thing it said.
            while not s.reader.closed and channel_error is None:
                if not select.select([s.reader.fd], [], [], 0)[0]:
                    break
                try:
                    for m in s.reader.read_available(killed=s.killed):
                        m["at"] = time.monotonic() - started
                        s.messages.append(m)
                        if m["kind"] == "done":
                            s.done = True
                except ValueError as exc:
                    channel_error = str(exc)
            os.close(s.reader.fd)
    end = time.monotonic()
    phase_seconds = {p: round(phase_last_end.get(p, end) - t0, 3) for p, t0 in phase_first_start.items()}
    return LaunchOutcome(states, timed_out, timeout_phase, channel_error, phase_seconds, round(end - started, 3),
                         containment.record() if containment is not None else {})


class _Stop(Exception):
    pass
