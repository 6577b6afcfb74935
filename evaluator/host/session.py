"""The processes of one evaluation and the host's conversation with them: the judge's ranks (trusted, outside the
sandbox) and the solution's ranks (inside it), commands on pipes the host opened, reports read back as JSON lines,
timer samples read and authenticated, every phase held to its limit, and the sandbox's processes and threads
watched from /proc. Any rule broken or limit passed ends the conversation with a :class:`Stop`."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.contract.profiles import HardwareProfile
from evaluator.contract.result import Verdict
from evaluator.host import engine_sites, sandbox, watch
from evaluator.rank import COMPILE_ERROR_EXIT, INFRA_ERROR_EXIT, RUNTIME_ERROR_EXIT

FAILURE_GRACE_S = 2.0  # after one rank fails, the others get this long to say why before everything is stopped
WATCH_EVERY_S = 0.25
THREAD_EXIT_POLLS, THREAD_EXIT_POLL_S = 10, 0.02  # up to 0.2 s for a joined thread to leave the task list
EXIT_CPU_MS = 2.0  # the CPU a joined thread may use to leave, once continued (microseconds, in practice)
FREEZE_LIMIT_S = 5.0  # a thread in the driver (uninterruptible) stops when it returns from it
# Stops in a row at which a rank's main thread may be found on its way to the engine's read of the next command (in
# user space) rather than in it: an honest rank is in it microseconds after its reply, long before the host stops it.
UNSEEN_WAITS = 5
# A sealed engine's code and tables are compared at one stop in this many, and at the end of each phase; an unsealed
# one at every stop. What the comparison still guards against there is a write past the seal nobody has found.
SEALED_COMPARE_EVERY = 8
# How long the host waits, before a stop, for each rank's main thread to reach that read. The wait ends as soon as
# every rank is in it (microseconds for an honest rank on an idle host); on a loaded host a rank can wait longer
# than a scheduler's time slice for a core between its reply and its read, and five such stops would refuse it.
SETTLE_S = 0.2


class Stop(Exception):
    """The evaluation ends here with ``verdict``; ``message`` is for the person who submitted."""

    def __init__(self, verdict: Verdict, message: str, ranks: list[int] | None = None, traceback: str = "") -> None:
        super().__init__(message)
        # .verdict is the document's plain string (Verdict(...) also refuses a name that is not a verdict)
        self.verdict: str = Verdict(verdict).value
        self.message, self.ranks, self.traceback = message, sorted(set(ranks or [])), traceback


def node_environment(profile: HardwareProfile, rank: int) -> dict[str, str]:
    """torchrun's names for where a rank sits; on a one-host simulation of several nodes, NCCL is told the groups
    are separate hosts (NCCL_HOSTID), so traffic between them takes its network transport."""
    per_node = profile.world_size // max(1, profile.nodes)
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank % per_node),
        "WORLD_SIZE": str(profile.world_size),
        "LOCAL_WORLD_SIZE": str(per_node),
        "GROUP_RANK": str(rank // per_node),
    }
    if profile.nodes > 1:
        env["NCCL_HOSTID"] = f"arena-node-{rank // per_node}"
    return env


@dataclass
class Peer:
    """One process the host talks to: a judge rank or a sandboxed rank."""

    rank: int
    commands: Any  # a writable file
    reports: wire.Lines
    messages: list[dict[str, Any]] = field(default_factory=list)
    # The same reports by kind, in order: the host's loop asks for one kind many times an iteration, and a scan of
    # every report so far made an evaluation's bookkeeping grow with the square of its iterations.
    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    samples: compiled_timer.SampleReader | None = None
    ended: bool = False
    # The replies the host has asked this rank for and not yet had, in order: (kind, the field that names the call).
    asked: list[tuple[str, Any]] = field(default_factory=list)
    dropped: int = 0  # reports past MAX_RANK_REPORTS, never stored

    def send(self, **command: Any) -> None:
        try:
            self.commands.write(json.dumps(command) + "\n")
            self.commands.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.ended = True

    def send_bytes(self, data: bytes) -> None:
        try:
            self.commands.buffer.write(data)
            self.commands.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.ended = True

    def add(self, m: dict[str, Any]) -> None:
        self.messages.append(m)
        self.by_kind.setdefault(str(m.get("kind")), []).append(m)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """This peer's reports of ``kind``, oldest first."""
        return self.by_kind.get(kind, [])

    def last(self, kind: str) -> dict[str, Any] | None:
        found = self.of_kind(kind)
        return found[-1] if found else None

    def first(self, kind: str) -> dict[str, Any] | None:
        found = self.of_kind(kind)
        return found[0] if found else None


class Session:
    def __init__(
        self,
        workdir: Path,
        profile: HardwareProfile,
        timer_path: Path,
        runtime: Path,
        solution_dir: Path,
        cache: Path,
        tmp_bytes: int,
    ) -> None:
        self.workdir = workdir
        self.profile = profile
        self.world_size = profile.world_size
        self.private = workdir / "judge"
        self.io = workdir / "io"
        self.started = time.monotonic()
        self.judges: list[Peer] = []
        self.ranks: list[Peer] = []
        self.judge_procs: list[subprocess.Popen] = []
        self.box: subprocess.Popen | None = None
        self.spawner_reports: wire.Lines | None = None
        self.judge_exits: wire.Lines | None = None  # the judge's sandbox says how each judge rank ended
        self.judge_codes: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.rank_pids: dict[int, int] = {}
        self.spawner_pids: frozenset[int] | None = None  # the ranks' parent, found before the solution loads
        self.threads_before: dict[int, set[tuple[int, int]]] = {}
        self.signals_before: dict[int, tuple[int, int] | None] = {}
        self.feeds: dict[int, tuple[int, int]] = {}  # each rank's feed slot file: (device, inode)
        # Each rank's feed slot, a memory file: given by descriptor to the judge's rank and the solution's rank of the
        # same number, it has no path, on the host or in either sandbox (its link reads /memfd:arena-feed).
        self.feed_fds: dict[int, int] = {}
        # Each rank's link between its judge's rank and its solution's rank (a connected pair of sockets, one end to
        # each, held here until that sandbox starts): the judge's rank sends the rank its device feed's descriptor
        # over it once, before the solution loads (evaluator/judge/rank.py _offer_device_feed).
        self.feed_links: dict[int, dict[str, int]] = {}
        self.command_fds: dict[int, int] = {}  # each rank's command descriptor, the same number in the rank
        self.unseen_waits: dict[int, int] = {}  # stops in a row at which a rank's wait could not be told
        self.engine_inode: int | None = None  # the engine's file, as _check_waits checks it
        self.read_site: engine_sites.ReadSite | None = None  # where in that file the engine reads its commands
        self.engine_bytes = b""  # that file, which the engine's code in every rank must be byte for byte
        self.engine_constant: list[tuple[int, int]] = []  # its extents never written once loaded
        self.command_channels: set[str] = set()  # every rank's command pipe ("pipe:[inode]")
        self.engine_fixed: list[tuple[int, int]] = []  # its extents set before the solution loads, never after
        self.waits_checked = 0  # stops at which the ranks' waits were checked (_check_waits)
        self.engine_serving = 0  # where its re-entry guard is, set from serve()'s start (engine_sites.serving_flag)
        self.fixed_before: dict[int, bytes] = {}  # each rank's bytes there, read before its solution loaded
        self.watching = False  # from the first trial on, only ranks and compilers may run in the sandbox
        self.phase = "setup"
        self.phase_seconds: dict[str, float] = {}
        self.events: dict[str, float] = {}
        self.escaped: list[str] = []
        # Signals whose handler a solution's call installed and the engine put back as the call returned.
        self.restored_signals: set[str] = set()
        self.timer_path, self.runtime, self.solution_dir, self.cache, self.tmp_bytes = (
            timer_path,
            runtime,
            solution_dir,
            cache,
            tmp_bytes,
        )
        self._last_watch = 0.0
        self._holds: list[int] = []  # write ends of the descriptors held sandboxes wait on
        # From the load on, a rank runs the solution's code, which can write to the rank's report descriptor: what
        # a rank says of itself after that is a claim, never the platform's word.
        self.solution_loaded = False
        # From the load on, the solution's ranks run only inside their own calls' windows: stopped from the moment
        # every rank said a call was done (its outputs copied out, the baseline timed, the judge at work) until the
        # host opens the next window. CPU ticks they used while stopped (none, unless a stop failed) are counted.
        self.frozen = False
        self.frozen_ticks = 0
        self.freezes = 0
        # Threads found the runtime's at a stop, by what they run, kept for the next (watch.what_runs).
        self.thread_verdicts: dict[tuple[object, ...], str] = {}
        self._ticks_at_freeze = 0
        self._stopped_pids: list[int] = []
        self._maps_read: dict[int, bytes] = {}  # each process's maps file as read at this stop (_stop_maps)
        self._tables_found: dict[int, list[str]] = {}  # each process's tables of descriptors at this stop
        self._held: dict[tuple[int, int], tuple[int, int]] = {}  # what each held thread had run when the stop held
        self.judge_reads: tuple[Path, ...] = ()  # folders the judge binds at their host paths (start_judges)

    def judge_text(self, text: str) -> str:
        """What the judge wrote (its reference's failure), with the folders it reads at their host paths (an imported
        suite's folder and its checkout) named by their last part. The judge's text is not the solution's, so the
        rewrite answers none of the solution's guesses (evaluate.neutral_paths rewrites only what the solution's own
        sandbox shows)."""
        for path in sorted(self.judge_reads, key=lambda p: -len(str(p))):
            text = text.replace(str(path), f"<{path.name}>")
        return text

    # -- starting -----------------------------------------------------------------------------------------
    def start_judges(
        self, config: dict[str, Any] | None, suites: Path | None, reads: tuple[Path, ...], hold: bool = False
    ) -> None:
        """The judge's ranks, in a sandbox of their own (they run the problem's reference, which for an imported
        suite is third-party code), under a uid that is neither root nor the solution's. With ``hold`` the sandbox
        imports its code and waits for :meth:`release` (``config`` then comes with it)."""
        if os.geteuid() == 0:
            os.chown(self.private, sandbox.JUDGE_UID, sandbox.JUDGE_GID)
        self.judge_reads = tuple(reads)
        self._make_feed_slots()
        fds: list[tuple[int, int, int, int]] = []
        keep: list[int] = []
        for r in range(self.world_size):
            cmd_r, cmd_w = os.pipe()
            rep_r, rep_w = os.pipe()
            link = self.feed_links[r].pop("judge")
            fds.append((cmd_r, rep_w, self.feed_fds[r], link))
            keep += [cmd_r, rep_w, link]
            peer = Peer(r, os.fdopen(cmd_w, "w"), wire.Lines(rep_r))
            if config is not None:
                peer.send(**config)
            self.judges.append(peer)
        spawn_r, spawn_w = os.pipe()
        keep.append(spawn_w)
        env = sandbox.judge_environment(dict(os.environ), self.profile.device, suites)
        if hold:
            keep.append(self._hold(env))
        env["ARENA_NODES"] = json.dumps([node_environment(self.profile, r) for r in range(self.world_size)])
        mounts = sandbox.JudgeMounts(self.private, self.io, self.timer_path, reads)
        argv = sandbox.judge_command(
            mounts,
            [
                sys.executable,
                "-m",
                "evaluator.rank.spawn",
                json.dumps(fds),
                str(spawn_w),
                "evaluator.judge.rank",
                str(self.private / "judge{r}.log"),
            ],
            env,
            self.profile.device,
            self.tmp_bytes,
        )
        try:
            with open(self.workdir / "judge-sandbox.log", "wb") as log:
                self.judge_procs.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        pass_fds=(*keep, *self.feed_fds.values()),
                        start_new_session=True,
                        preexec_fn=sandbox.limits(self.profile.device),
                    )
                )
        finally:
            for fd in keep:
                os.close(fd)
        self.judge_exits = wire.Lines(spawn_r)

    def _make_feed_slots(self) -> None:
        """Each judge rank's folder, and each rank's feed slot: a memory file the host hands, by descriptor, to the
        judge's rank and the solution's rank of the same number before either sandbox starts."""
        for r in range(self.world_size):
            folder = self.private / f"r{r}"
            folder.mkdir(mode=0o700, exist_ok=True)
            if os.geteuid() == 0:
                os.chown(folder, sandbox.JUDGE_UID, sandbox.JUDGE_GID)
            if r not in self.feed_fds:
                fd = os.memfd_create("arena-feed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
                # The judge writes a frame through its mapping, and writing past the end of a file a rank shrank kills
                # the writer (SIGBUS): no holder may shrink it, nor seal it further (a seal against growing or writing
                # would fail the judge's next frame).
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
                info = os.fstat(fd)
                self.feed_fds[r] = fd
                self.feeds[r] = (info.st_dev, info.st_ino)
            if r not in self.feed_links:
                judge_end, rank_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.feed_links[r] = {"judge": judge_end.detach(), "rank": rank_end.detach()}

    def _hold(self, env: dict[str, str]) -> int:
        """A descriptor the sandbox's first process waits on (its read end, to pass to the sandbox)."""
        go_r, go_w = os.pipe()
        env["ARENA_HOLD_FD"] = str(go_r)
        self._holds.append(go_w)
        return go_r

    def release(self, judge_config: dict[str, Any], rank_config: dict[str, Any]) -> None:
        """Hands sandboxes started with ``hold`` their evaluation: the judges' configuration, the ranks' one, and
        the word to fork the ranks."""
        (self.io / "config.json").write_text(json.dumps(rank_config))
        for p in self.judges:
            p.send(**judge_config)
        for fd in self._holds:
            os.write(fd, b"go\n")
            os.close(fd)
        self._holds = []
        self.started = time.monotonic()
        # What happened while the sandboxes waited happened before this evaluation began.
        self.events = {k: 0.0 for k in self.events if k.endswith("_imported")}

    def wait_imported(self, timeout_s: float) -> bool:
        """For sandboxes started with ``hold``: True once both first processes have imported their code (torch
        with it), False when ``timeout_s`` passes first."""
        deadline = time.monotonic() + timeout_s
        while not {"sandbox_imported", "judge_imported"} <= self.events.keys():
            lines = [x for x in (self.spawner_reports, self.judge_exits) if x is not None and not x.closed]
            left = deadline - time.monotonic()
            if not lines or left <= 0:
                return False
            ready, _, _ = select.select([x.fd for x in lines], [], [], left)
            for x in lines:
                if x.fd in ready:
                    self._read_spawner(x)
        return True

    def start_sandbox(self, config: dict[str, Any] | None, hold: bool = False) -> None:
        if config is not None:
            (self.io / "config.json").write_text(json.dumps(config))
        fds: list[tuple[int, int, int, int, int]] = []
        keep: list[int] = []
        for r in range(self.world_size):
            cmd_r, cmd_w = os.pipe()
            rep_r, rep_w = os.pipe()
            tim_r, tim_w = os.pipe()
            # This rank's inputs of the timed iterations, by descriptor: no path in the sandbox leads to them, so
            # another rank cannot read them (the exchange folder holds only what each rank writes itself).
            # Writable: the rank's engine zeroes it once the call's inputs are in their own storage.
            feed = self.feed_fds[r]
            link = self.feed_links[r].pop("rank")
            self.command_fds[r] = cmd_r
            fds.append((cmd_r, rep_w, tim_w, feed, link))
            keep += [cmd_r, rep_w, tim_w, link]
            peer = Peer(r, os.fdopen(cmd_w, "w"), wire.Lines(rep_r), samples=compiled_timer.SampleReader(tim_r))
            os.set_blocking(tim_r, False)
            self.ranks.append(peer)
        spawn_r, spawn_w = os.pipe()
        keep.append(spawn_w)
        env = sandbox.environment(dict(os.environ), self.profile.device)
        env["ARENA_NODES"] = json.dumps([node_environment(self.profile, r) for r in range(self.world_size)])
        if hold:
            keep.append(self._hold(env))
        mounts = sandbox.Mounts(self.runtime, self.timer_path, self.solution_dir, self.io, self.cache)
        argv = sandbox.command(
            mounts,
            [sys.executable, "-m", "evaluator.rank.spawn", json.dumps(fds), str(spawn_w)],
            env,
            self.profile.device,
            self.tmp_bytes,
        )
        # The host's copies of the ranks' ends are closed whatever happens: a timer pipe's write end left open here
        # would keep close() reading it for ever.
        try:
            with open(self.workdir / "sandbox.log", "wb") as log:
                self.box = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(*keep, *(feed for _, _, _, feed, _ in fds)),
                    start_new_session=True,
                    preexec_fn=sandbox.limits(self.profile.device),
                )
        finally:
            for fd in keep:
                os.close(fd)
        self.spawner_reports = wire.Lines(spawn_r)

    # -- talking ------------------------------------------------------------------------------------------
    def tell_judges(self, **command: Any) -> None:
        for p in self.judges:
            p.send(**command)

    def tell_ranks(self, **command: Any) -> None:
        for p in self.ranks:
            p.send(**command)

    def command_ranks(self, op: int, i: int = 0, flags: int = 0, arg: float = 0.0) -> None:
        """A command to the compiled engine that serves each rank from the solution's load on. The reply it asks
        for is noted first: a rank's reply counts only as the answer to a command sent before it (_take_report).
        A call's command carries the key its rank's feed frame was masked under, from the judge of that rank's
        "shown" (evaluator/judge/rank.py ``_write_feed``): each rank's engine alone learns its own."""
        self.thaw_ranks()
        reply = _reply_to(op, i, flags)
        keys = self._feed_keys() if op in (compiled_timer.CALL, compiled_timer.TIME) else {}
        for p in self.ranks:
            if reply is not None:
                p.asked.append(reply)
            p.send_bytes(compiled_timer.command(op, i, flags, arg, keys.get(p.rank, (0, 0))))

    def _feed_keys(self) -> dict[int, tuple[int, int]]:
        """Each rank's feed key, from its judge's last "shown"."""
        keys = {}
        for judge in self.judges:
            shown = judge.last("shown") or {}
            k0, k1 = shown.get("key") or (0, 0)
            keys[judge.rank] = (int(k0), int(k1))
        return keys

    def load_solution(self, path: str) -> None:
        self.solution_loaded = True
        self.tell_ranks(op="load", path=path)

    def begin(self, phase: str) -> None:
        now = time.monotonic() - self.started
        self.phase_seconds[self.phase] = round(now - self.phase_seconds.get(f"_{self.phase}", 0.0), 3)
        self.phase = phase
        self.phase_seconds[f"_{phase}"] = now

    def mark(self, event: str) -> None:
        """When ``event`` happened, in seconds since the evaluation began (the result's timeline)."""
        self.events[event] = round(time.monotonic() - self.started, 3)

    def phases(self) -> dict[str, float]:
        self.begin("end")
        return {k: v for k, v in self.phase_seconds.items() if not k.startswith("_") and k != "end"}

    def wait(self, peers: list[Peer], kind: str, limit_s: float, match: dict[str, Any] | None = None) -> None:
        """Returns once every peer has reported ``kind`` (with ``match``'s fields); raises :class:`Stop` when a rank
        fails, dies, breaks a rule, or the limit passes."""
        deadline = time.monotonic() + limit_s
        failed_at: float | None = None
        match = match or {}

        # How many of each peer's reports of ``kind`` were already found not to match: reports are only ever added,
        # so each is looked at once per wait, however many times the host's loop comes round while it waits.
        scanned: dict[int, int] = {}

        def arrived(p: Peer) -> bool:
            found = p.of_kind(kind)
            if any(all(m.get(k) == v for k, v in match.items()) for m in reversed(found[scanned.get(id(p), 0) :])):
                return True
            scanned[id(p)] = len(found)
            return False

        first = True
        while True:
            # A report may have arrived while the host waited for another: look before blocking in select.
            self._pump(0.0 if first else 0.05 if failed_at is None else 0.02)
            first = False
            judge_error = next((m for p in self.judges for m in p.of_kind("judge_error")), None)
            if judge_error and judge_error.get("imported"):
                # An imported suite's reference is the ground truth; when it fails on these inputs the run cannot
                # be judged, and the suite's input decision (evaluator/suites/pkb/) takes it from here.
                raise Stop(
                    Verdict.RUNTIME_ERROR,
                    f"the imported problem's reference failed on rank "
                    f"{judge_error.get('rank')}: {self.judge_text(judge_error['message'])}",
                    traceback=self.judge_text(judge_error.get("traceback", "")),
                )
            if (
                judge_error
                or any(code != 0 for code in self.judge_codes.values())
                or any(p.reports.closed for p in self.judges if p in peers)
            ):
                detail = judge_error["message"] if judge_error else "a judge process ended unexpectedly"
                detail = self.judge_text(detail)
                raise Stop(
                    Verdict.INFRA_ERROR,
                    f"the judge failed ({detail}); this is the platform's fault, not the solution's",
                    traceback=self.judge_text((judge_error or {}).get("traceback", "")),
                )
            errors = sorted(
                (m for p in self.ranks for k in ("error", "garbled") for m in p.of_kind(k)), key=lambda m: m["received"]
            )
            dead = [p.rank for p in self.ranks if p.reports.closed and not p.last("finished")]
            if self.spawner_reports is not None:
                self._read_spawner(self.spawner_reports)
            if (errors or dead) and failed_at is None:
                failed_at = time.monotonic()
            if failed_at is not None and (
                time.monotonic() - failed_at >= FAILURE_GRACE_S
                or all(p.reports.closed or p.last("error") for p in self.ranks)
            ):
                raise self._failure(errors, dead)
            self._watch()
            if failed_at is None and all(arrived(p) for p in peers):
                return
            if time.monotonic() > deadline and failed_at is None:
                late = [p.rank for p in peers if not arrived(p)]
                raise Stop(
                    Verdict.TIMEOUT,
                    f"the {self.phase} phase passed its limit of {limit_s:g} s: rank(s) "
                    f"{', '.join(map(str, late))} did not finish it (stuck in a collective, a "
                    f"send/recv waiting for a peer, or a loop) and every rank was stopped",
                    late,
                )

    def _pump(self, wait_s: float) -> None:
        fds: dict[int, Any] = {}
        for p in self.judges + self.ranks:
            if not p.reports.closed:
                fds[p.reports.fd] = p
            if p.samples is not None and p.samples.fd >= 0:
                fds[p.samples.fd] = p.samples
        if self.spawner_reports is not None and not self.spawner_reports.closed:
            fds[self.spawner_reports.fd] = self.spawner_reports
        if self.judge_exits is not None and not self.judge_exits.closed:
            fds[self.judge_exits.fd] = self.judge_exits
        if not fds:
            time.sleep(wait_s)
            return
        ready, _, _ = select.select(list(fds), [], [], wait_s)
        for fd in ready:
            target = fds[fd]
            if isinstance(target, Peer):
                for m in target.reports.read_available():
                    if target in self.ranks:
                        m = self._take_report(target, m)
                        if m is None:
                            continue
                    m["received"] = time.monotonic()  # the host's clock: what the timing's cross-check reads
                    m["at"] = round(m["received"] - self.started, 3)
                    target.add(m)
            elif isinstance(target, compiled_timer.SampleReader):
                if not target.read_available():
                    os.close(target.fd)
                    target.fd = -1
            elif isinstance(target, wire.Lines):
                self._read_spawner(target)

    def _take_report(self, p: Peer, m: dict[str, Any]) -> dict[str, Any] | None:
        """A sandboxed rank's report as the host keeps it: as written when it is one the rank's own code writes at
        this point, else a ``garbled`` note of why not (the solution's doing: rejected). A reply (``called``,
        ``timed``, ``spun``) counts only as the answer to the command the host sent for it, once: a reply written
        ahead of its command (it once ended a window before it opened) or twice is garbled. Reports past
        MAX_RANK_REPORTS are dropped unread, so a flood cannot slow the host's loop inside the windows it times."""
        if len(p.messages) >= MAX_RANK_REPORTS:
            p.dropped += 1
            if p.dropped > 1:
                return None
            return {"kind": "garbled", "rank": p.rank, "why": f"more than {MAX_RANK_REPORTS} reports"}
        kind = m.get("kind")
        if kind == "garbled":  # the channel's reader already said it was no report (evaluator/wire.py)
            return m
        wrong = wire.malformed_rank_report(m, p.rank)
        if not wrong and kind not in RANK_REPORT_KINDS:
            wrong = f"a report of a kind no rank writes ({str(kind)[:40]!r})"
        if not wrong and kind in ONCE_KINDS and p.first(kind):
            wrong = f"a second {kind} report"  # a rank boots, loads the solution and finishes once
        if not wrong and kind in REPLY_KINDS:
            named = m.get(REPLY_KINDS[kind]) if REPLY_KINDS[kind] else None
            if p.asked and p.asked[0] == (kind, named):
                p.asked.pop(0)
            else:
                which = f" for {str(named)[:40]!r}" if named is not None else ""
                wrong = f"a {kind} reply{which} to no command of the host's (written ahead of its command, or twice)"
        if wrong:  # written by the solution's code: its doing (rejected by wait), not the host's failure
            return {"kind": "garbled", "rank": p.rank, "why": wrong}
        return m

    def _read_spawner(self, lines: wire.Lines) -> None:
        """What a sandbox's first process reports (``lines``: the judge's or the solution's): when it has imported
        the ranks' code (torch with it), and how each rank ended."""
        judge = lines is self.judge_exits
        exits, which = (self.judge_codes, "judge") if judge else (self.exits, "sandbox")
        for m in lines.read_available():
            if m.get("kind") == "exit" and type(m.get("rank")) is int and type(m.get("code", 0)) is int:
                exits[m["rank"]] = m.get("code", 0)
            elif m.get("kind") == "imported" and f"{which}_imported" not in self.events:
                self.mark(f"{which}_imported")

    def _failure(self, errors: list[dict[str, Any]], dead: list[int]) -> Stop:
        for m in errors:
            if m.get("kind") == "garbled":
                why = f" ({m['why']})" if m.get("why") else ""
                return Stop(
                    Verdict.REJECTED,
                    f"rank {m.get('rank', '?')} wrote something other than the evaluator's reports on the "
                    f"channel to the host{why}: a solution must not write to the evaluator's descriptors",
                )
        # Only a rank that has not run the solution's code can say the platform failed it (its boot): after the
        # load, a solution could write that report itself to turn its failure into a retry on another host.
        infra = [m for m in errors if m.get("category") == "infra" and not self.solution_loaded]
        if infra:
            return Stop(
                Verdict.INFRA_ERROR,
                f"rank {infra[0].get('rank')} could not start: {infra[0].get('message')}",
                [m.get("rank") for m in infra],
            )
        # A rank that only saw its peer go away is not the cause when a rank died: the dead one is.
        causes = [m for m in errors if not _peer_failure(str(m.get("message", "")))] or ([] if dead else errors)
        if causes:
            return self._reported(causes)
        time.sleep(0.1)
        self._pump(0.05)
        # Every rank that ended had reported its own failure, and ended as a rank does after one: the failure is what
        # they reported, though each report reads like a peer's (a gloo error names gloo). Whether a rank's exit or
        # its report reached the host first was chance, and the exit alone reads as a solution ending its process.
        reported = [self.ranks[r].last("error") for r in dead]
        if dead and all(
            m is not None and self.exits.get(r) in (None, RUNTIME_ERROR_EXIT, COMPILE_ERROR_EXIT, INFRA_ERROR_EXIT)
            for r, m in zip(dead, reported)
        ):
            return self._reported([m for m in reported if m is not None])
        parts = []
        # A rank that reported its own failure (its peer went away) did not end itself: the rank that died did.
        dead = [r for r in dead if not self.ranks[r].last("error")] or dead
        dead.sort(key=lambda r: not (self.exits.get(r) is not None and self.exits[r] < 0))  # signal deaths first
        for r in dead:
            code = self.exits.get(r)
            if code == -signal.SIGSYS:
                return Stop(
                    Verdict.REJECTED,
                    f"rank {r} tried to re-point the evaluator's report, timer, command or slot descriptors "
                    f"(dup2/dup3 onto one), to read its command channel outside the engine or to install a system-call "
                    f"filter in the {self.phase} phase, and the "
                    f"evaluator's channel lock ended it: none of these is the solution's to do",
                    [r],
                )
            if code is not None and code < 0:
                try:
                    how = f"signal {signal.Signals(-code).name}"
                except ValueError:
                    how = f"signal {-code}"
                parts.append(
                    f"rank {r} died ({how}) in the {self.phase} phase without reporting an error (a crash "
                    f"in native code, or a signal)"
                )
            elif code == compiled_timer.ENGINE_REENTERED_EXIT:
                return Stop(
                    Verdict.REJECTED,
                    f"rank {r} called the evaluator's engine from inside its own call in the {self.phase} phase "
                    f"(its engine ended the rank): a call must return to the evaluator, which alone serves the "
                    f"host's commands and writes the rank's reports",
                    [r],
                )
            elif code == compiled_timer.ENGINE_ALTERED_EXIT:
                return Stop(
                    Verdict.REJECTED,
                    f"rank {r} altered an object the evaluator's engine calls through in the {self.phase} phase (the "
                    f"process group's backend, or a library's table of addresses; its engine ended the rank): the "
                    f"code that aligns and times the calls is not the solution's to change",
                    [r],
                )
            elif code == compiled_timer.CHANNEL_REPLACED_EXIT:
                return Stop(
                    Verdict.REJECTED,
                    f"rank {r} re-pointed the evaluator's report or timer descriptor in the {self.phase} phase "
                    f"(its engine ended the rank before writing to it): the evaluator's channels are not the "
                    f"solution's to touch",
                    [r],
                )
            else:
                return Stop(
                    Verdict.REJECTED,
                    f"rank {r} exited in the {self.phase} phase before the evaluation finished "
                    f"(status {code}): a solution must return its outputs, never end the process "
                    f"(sys.exit, os._exit)",
                    dead,
                )
        return Stop(Verdict.RUNTIME_ERROR, "; ".join(parts), dead)

    def _reported(self, causes: list[dict[str, Any]]) -> Stop:
        """The verdict for failures the ranks reported themselves: the earliest decides."""
        first = min(causes, key=lambda m: m.get("at", 0))
        phase = first.get("phase", self.phase)
        ranks = [m.get("rank") for m in causes if m.get("phase") == phase]
        if first.get("category") == "compile":
            return Stop(
                Verdict.COMPILE_ERROR,
                f"rank {first.get('rank')} failed while importing the solution: {first.get('message')}",
                ranks,
                first.get("traceback", ""),
            )
        return Stop(
            Verdict.RUNTIME_ERROR,
            f"rank {first.get('rank')} failed in the {self.phase} phase: {first.get('message')}",
            ranks,
            first.get("traceback", ""),
        )

    def _check_feeds(self, what: str) -> None:
        """With the ranks stopped: each rank maps its own feed slot only as the engine does (shared: a private
        mapping over the engine's view sends its zeroing to private pages), and holds no other rank's feed (a
        descriptor passed over a socket lets a peer read the inputs before the engine zeroes them)."""
        for r, pid in self.rank_pids.items():
            others = {feed: q for q, feed in self.feeds.items() if q != r}
            misuse = watch.feed_misuse(pid, self.feeds.get(r), others, self._stop_maps, self._stop_tables)
            if misuse:
                raise Stop(
                    Verdict.REJECTED,
                    f"rank {r} held {misuse} after {what}: each rank's inputs reach it through its own feed, "
                    f"which its engine reads and zeroes",
                    [r],
                )

    def _read_engine(self) -> tuple[int, engine_sites.ReadSite]:
        """What the host checks each rank's engine against, read from the file it built: once, since the engine does
        not change during an evaluation. Its inode and the offsets of its command read are returned."""
        if self.engine_inode is None or self.read_site is None:
            try:
                self.engine_inode = os.stat(self.timer_path).st_ino
                self.read_site = engine_sites.read_site(str(self.timer_path))
                self.engine_bytes = engine_sites.built_bytes(str(self.timer_path))
                self.engine_constant = engine_sites.constant_extents(str(self.timer_path))
                self.engine_fixed = engine_sites.fixed_extents(str(self.timer_path))
                self.engine_serving = engine_sites.serving_flag(str(self.timer_path))
            except (OSError, engine_sites.EngineSiteError) as exc:
                raise Stop(Verdict.INFRA_ERROR, f"the evaluator's engine could not be read: {exc}") from None
        return self.engine_inode, self.read_site

    def _check_waits(self, what: str) -> None:
        """With the ranks stopped after a reply, each rank's main thread must be waiting for the host's next command
        inside the engine (watch.waits_for_command): a solution whose call never returned, and that answers the
        host's commands with code of its own (a copy of the engine built under another name has state of its own,
        so the engine's re-entry guard does not see it), waits elsewhere. And the engine's code in each rank must be
        the file the host built, byte for byte (watch.engine_code_changed), and its fixed tables what they were
        before the solution loaded (watch.engine_fixed)."""
        inode, site = self._read_engine()
        if not self.command_channels:  # every rank's command pipe, as the host gave them (a rank holds its own alone)
            for r, pid in self.rank_pids.items():
                channel = watch.command_channel(pid, self.command_fds[r]) if r in self.command_fds else None
                if channel is not None:
                    self.command_channels.add(channel)
        self.waits_checked += 1
        for r, pid in self.rank_pids.items():
            if r not in self.command_fds:
                continue
            # Sealed (the rank's engine said so as the solution loaded), the engine's code and tables cannot change
            # (docs/threat-model.md): compared at every SEALED_COMPARE_EVERY-th stop and at the end (check_engine),
            # where an unsealed engine is compared at every stop.
            if not self._sealed(r) or self.waits_checked % SEALED_COMPARE_EVERY == 0:
                self._compare_engine(r, pid, inode, what)
            copies = watch.command_copies(pid, self.command_fds[r], self.command_channels, self._stop_tables)
            if copies:
                raise Stop(
                    Verdict.REJECTED,
                    f"rank {r} held a second descriptor of a rank's command channel ({copies[0]}) after {what}: "
                    f"only each rank's engine reads the host's commands, through the one descriptor the host gave it",
                    [r],
                )
            waits, elsewhere = watch.waits_for_command(pid, self.command_fds[r], sandbox.ENGINE_IN_SANDBOX, inode, site)
            if waits is None:
                self.unseen_waits[r] = self.unseen_waits.get(r, 0) + 1
                if self.unseen_waits[r] < UNSEEN_WAITS:
                    continue
                elsewhere = f"it was not waiting in any system call at {UNSEEN_WAITS} stops in a row"
            elif waits:
                self.unseen_waits[r] = 0
                if watch.engine_serving(pid, sandbox.ENGINE_IN_SANDBOX, inode, self.engine_serving) is False:
                    raise Stop(
                        Verdict.REJECTED,
                        f"rank {r}'s engine was not the evaluator's after {what} (its guard against calls into it "
                        f"from inside the solution's call was cleared): the code that times the calls and writes the "
                        f"reports is not the solution's to change",
                        [r],
                    )
                continue
            raise Stop(
                Verdict.REJECTED,
                f"rank {r} was not waiting for the host's next command in the evaluator's engine after {what} "
                f"({elsewhere}): a solution's call must return, and only the engine answers the host's commands",
                [r],
            )

    def _sealed(self, r: int) -> bool:
        """Whether rank ``r``'s engine said, as its solution loaded, that the kernel sealed it."""
        loaded = next((p.first("loaded") for p in self.ranks if p.rank == r), None)
        return bool(loaded and loaded.get("sealed") is True)

    def engine_sealed(self) -> bool | None:
        """Whether every rank's engine was sealed; None where a rank never got as far as its solution's load."""
        if not self.ranks or any(p.first("loaded") is None for p in self.ranks):
            return None
        return all(self._sealed(p.rank) for p in self.ranks)

    def _compare_engine(self, r: int, pid: int, inode: int, what: str) -> None:
        """Rank ``r``'s engine code is the file the host built, byte for byte (watch.engine_code_changed), and its
        fixed tables what they were before the solution loaded (watch.engine_fixed)."""
        changed = watch.engine_code_changed(
            pid, sandbox.ENGINE_IN_SANDBOX, inode, self.engine_bytes, self.engine_constant
        )
        if changed is not None:
            raise Stop(
                Verdict.REJECTED,
                f"rank {r}'s engine was not the evaluator's after {what} ({changed}): the code that times the "
                f"calls and writes the reports is not the solution's to change",
                [r],
            )
        before = self.fixed_before.get(r)
        now = watch.engine_fixed(pid, sandbox.ENGINE_IN_SANDBOX, inode, self.engine_fixed)
        if before is not None and now is not None and now != before:
            raise Stop(
                Verdict.REJECTED,
                f"rank {r}'s engine was not the evaluator's after {what} (its table of library addresses, its "
                f"driver table or what it set when opened changed after that): the code that times the calls and "
                f"writes the reports is not the solution's to change",
                [r],
            )

    def check_engine(self, what: str) -> None:
        """Every rank's engine compared now, sealed or not (the end of a phase)."""
        if not self.rank_pids or not self.command_fds:
            return
        inode, _ = self._read_engine()
        for r, pid in self.rank_pids.items():
            if r in self.command_fds:
                self._compare_engine(r, pid, inode, what)

    def _check_signals(self, what: str) -> None:
        """Read from outside the process, with the ranks stopped: each rank's signal dispositions are those it had
        before the solution loaded. The engine puts back whatever a call changed as the call returns (and reports
        it); a disposition still changed here was changed after that, or by code that never let the engine run."""
        for r, pid in self.rank_pids.items():
            before, now = self.signals_before.get(r), watch.signal_dispositions(pid)
            if before is None or now is None or before == now:
                continue
            names = watch.changed_signals(before, now)
            raise Stop(
                Verdict.REJECTED,
                f"rank {r} held a signal disposition of its own between calls after {what} ({', '.join(names[:4])}): "
                f"a handler may run only inside the solution's calls, and the evaluator puts back any a call "
                f"installs as it returns",
                [r],
            )

    # -- watching -----------------------------------------------------------------------------------------
    def _watch(self, force: bool = False, between_calls: bool = False) -> None:
        """Refuses a process other than the ranks (and, during a call, build tools run from their installed paths).
        ``between_calls``: every call has returned, so no build is running and a build tool still there is a helper
        of the solution's (a red team kept the host's own shell alive through the timing phase, holding a peer's
        feed descriptor and waiting for a signal)."""
        if self.box is None or not self.watching:
            return
        now = time.monotonic()
        if not force and now - self._last_watch < WATCH_EVERY_S:
            return
        self._last_watch = now
        _, strange = watch.classify(
            self.box.pid, self.world_size, sys.executable, self.spawner_pids, builds=not between_calls
        )
        if strange:
            p = strange[0]
            if between_calls and watch.is_toolchain(p):
                raise Stop(
                    Verdict.REJECTED,
                    f"a build tool ran on after the call that started it returned ({self.phase} phase): pid "
                    f"{watch.shown_id(p.pid)} `{p.cmdline[:200] or p.exe}`; a build runs inside the call that needs "
                    f"it, and whatever a solution starts must end before its call returns",
                )
            raise Stop(
                Verdict.REJECTED,
                f"a process other than the ranks ran in the sandbox in the {self.phase} phase: "
                f"pid {watch.shown_id(p.pid)} `{p.cmdline[:200] or p.exe}`; from the first trial on only the "
                f"ranks (and compilers, from their installed paths, while a call runs) may run",
            )

    def find_ranks(self) -> None:
        """The ranks, and their spawner, found before the solution loads: from then on no other process is either."""
        if self.box is None:
            return
        ranks, _ = watch.classify(self.box.pid, self.world_size, sys.executable)
        self.rank_pids = ranks
        # None (the spawner known by its look, as before) only where no rank was found to say who spawned it.
        self.spawner_pids = frozenset(p for p in map(watch.parent, ranks.values()) if p is not None) or None

    def snapshot_threads(self) -> None:
        self.find_ranks()
        self.threads_before = {r: watch.thread_ids(pid) for r, pid in self.rank_pids.items()}
        # The signal dispositions the engine keeps between calls (it puts back whatever a call changed as it returns).
        self.signals_before = {r: watch.signal_dispositions(pid) for r, pid in self.rank_pids.items()}
        # The engine's table of library addresses and its driver table, set when it was opened, before any solution
        # code: compared at every stop (_check_waits).
        inode, _ = self._read_engine()
        for r, pid in self.rank_pids.items():
            fixed = watch.engine_fixed(pid, sandbox.ENGINE_IN_SANDBOX, inode, self.engine_fixed)
            if fixed is not None:
                self.fixed_before[r] = fixed

    def check_threads(self, what: str) -> None:
        """Nothing the solution starts may outlive its call, a signal handler included. A process other than the ranks
        is looked for first: what it does to the ranks (a shell's stream of SIGCONTs, say) would otherwise be named
        instead of it."""
        self._watch(force=True, between_calls=True)
        if self.frozen:
            self._check_signals(what)
            self._check_feeds(what)
            self._check_waits(what)
        for r, pid in self.rank_pids.items():
            extra = watch.new_solution_threads(
                pid, self.threads_before.get(r, set()), self.thread_verdicts, self._stop_maps
            )
            if extra and not self.frozen:
                # A running thread's stack cannot be read (watch.what_runs): the ranks, idle between two of the
                # host's commands, are held for a second look at what their new threads run.
                self.freeze_ranks()
                try:
                    extra = watch.new_solution_threads(
                        pid, self.threads_before.get(r, set()), self.thread_verdicts, self._stop_maps
                    )
                finally:
                    self.thaw_ranks()
            # A thread joined just before the call returned may still be leaving the kernel's task list: a thread
            # in the exit path is not held by a stop and is not counted (watch.new_solution_threads); the host waits
            # for it first while the ranks are held, and continues them only if one is still there. Only whether
            # the threads found are still there is asked again: a running thread's stack cannot be read.
            for _ in range(THREAD_EXIT_POLLS):
                if not extra:
                    break
                time.sleep(THREAD_EXIT_POLL_S)
                extra = watch.still_there(pid, extra)
            if extra and self.frozen:
                # A joined thread stopped just before its exit path (its Python part done) leaves only once
                # continued: the ranks run again for at most the same polls, then are held again. Leaving costs a
                # thread microseconds of CPU; one that works meanwhile works off every clock, and is refused.
                ran = {tid: watch.thread_cpu_ns(pid, tid) for tid, _ in extra}
                last = dict(ran)
                self.thaw_ranks()
                for _ in range(THREAD_EXIT_POLLS * 20):
                    time.sleep(THREAD_EXIT_POLL_S / 20)
                    for tid in last:
                        last[tid] = watch.thread_cpu_ns(pid, tid) or last[tid]
                    extra = watch.still_there(pid, extra)
                    if not extra:
                        break
                self.freeze_ranks()
                worked = max((last[t] or 0) - (ran[t] or 0) for t in ran) / 1e6
                if not extra and worked > EXIT_CPU_MS:  # gone, but it worked first (one still there is refused below)
                    raise Stop(
                        Verdict.REJECTED,
                        f"rank {r}: a thread the solution started ran {worked:.1f} ms of CPU after {what}, while "
                        f"the host waited for it to end; threads a solution starts must end before its call returns",
                        [r],
                    )
            if extra:
                tid, label = extra[0]
                said = [m for p in self.ranks if p.rank == r for m in reversed(p.messages) if "py_threads" in m]
                claim = (
                    said[0]["py_threads"].get(str(watch.inner_id(pid, tid)))
                    if said and isinstance(said[0]["py_threads"], dict)
                    else None
                )
                reported = f"; the rank reports it as a {str(claim)[:200]}" if claim else ""
                seen = f"thread {watch.shown_id(pid, tid)} ({label}{reported})"
                raise Stop(
                    Verdict.REJECTED,
                    f"rank {r}: {len(extra)} thread(s) the solution started were still running "
                    f"after {what} ({seen}); threads, pools and processes a solution starts "
                    f"must end before its call returns",
                    [r],
                )
        self._watch(force=True, between_calls=True)

    def freeze_ranks(self) -> None:
        """Stops every process of the solution's sandbox but bubblewrap's own (SIGSTOP, which no handler can catch;
        every thread of a process stops), the ranks and anything else in it: a build tool, the spawner, a helper not
        yet seen by the process rule. No process of the sandbox is left running to continue another (SIGCONT), so the
        stop holds as a freezer would. Returns once every thread is stopped: nothing of the solution's runs while the
        host copies its outputs, while the baseline is timed on the same cores and device, or while the judge draws
        and checks. A thread in the middle of leaving is let go; one that does not stop within FREEZE_LIMIT_S is the
        solution's doing (nothing of the evaluator's stays in the kernel that long between calls)."""
        if self.frozen or not self.rank_pids or self.box is None:
            return
        self._settle()
        self.frozen = True
        self.freezes += 1
        stopped: set[int] = set()
        held: dict[tuple[int, int], tuple[int, int]] = {}
        deadline = time.monotonic() + FREEZE_LIMIT_S
        settled_by = time.monotonic() + SETTLE_S
        while True:
            # Again until every process is held: one forked while the others were being stopped is stopped too,
            # and one that another continued (SIGCONT) before that other was itself stopped is stopped again.
            now = set(watch.sandbox_processes(self.box.pid)) | set(self.rank_pids.values())
            for pid in sorted(now):
                if pid not in stopped or not watch.stopped(pid):
                    try:
                        os.kill(pid, signal.SIGSTOP)
                    except ProcessLookupError:
                        pass
            stopped |= now
            # Held only when two passes in a row find every process stopped and no new one: a process continued by
            # another in the instant before that other was stopped is running in the second. The threads' CPU times
            # are read between the two passes, so whatever runs after the reading shows when the stop ends
            # (thaw_ranks), a process that stops itself again included.
            if self._all_stopped(stopped):
                # A thread whose stop is set but whose last switch is not done yet is waited for a while; past
                # SETTLE_S its count is taken as it is (a kernel that never says it is off its run queue).
                reading = watch.held_threads(sorted(stopped), off_cpu=time.monotonic() <= settled_by)
                if reading is not None:
                    held = reading
                    if self._all_stopped(stopped):
                        break
            # A thread held in the kernel by a process of the solution's (a vfork whose child never execs, say)
            # does not stop: that process is seen first, as any process other than the ranks is.
            self._watch()
            if time.monotonic() > deadline:
                running = [
                    f"pid {watch.shown_id(pid)}: {', '.join(watch.running_threads(pid)[:3])}"
                    for pid in sorted(stopped)
                    if not watch.stopped(pid)
                ]
                raise Stop(
                    Verdict.REJECTED,
                    f"a thread of the solution's could not be stopped between calls within {FREEZE_LIMIT_S:g} "
                    f"s ({'; '.join(running)}): the sandbox must hold still outside the solution's calls, which a "
                    f"thread kept in the kernel prevents",
                )
            time.sleep(0.0001)
        self._stopped_pids = sorted(stopped)
        self._maps_read.clear()
        self._tables_found.clear()
        self._held = held
        self._ticks_at_freeze = sum(watch.cpu_ticks(pid) for pid in self._stopped_pids)

    def _stop_maps(self, pid: int) -> bytes:
        """A process's maps file, read once a stop for every check that reads it (the feeds' and the threads'): a
        stopped sandbox changes no mapping, and a rank of 40,000 mappings costs the kernel about 30 ms a reading.
        Read anew each time while the sandbox runs."""
        if not self.frozen:
            return watch.read_maps_file(pid)
        if pid not in self._maps_read:
            self._maps_read[pid] = watch.read_maps_file(pid)
        return self._maps_read[pid]

    def _stop_tables(self, pid: int) -> list[str]:
        """A process's tables of descriptors (watch.descriptor_tables), found once a stop for the feeds' check and the
        command channels': a stopped process makes no thread and shares or unshares no table. Found anew each time
        while the sandbox runs."""
        if not self.frozen:
            return watch.descriptor_tables(pid)
        if pid not in self._tables_found:
            self._tables_found[pid] = watch.descriptor_tables(pid)
        return self._tables_found[pid]

    def _all_stopped(self, stopped: set[int]) -> bool:
        """Every process of ``stopped`` is stopped, and the sandbox holds no other."""
        assert self.box is not None
        return all(watch.stopped(pid) for pid in stopped) and set(watch.sandbox_processes(self.box.pid)) <= stopped

    def _settle(self) -> None:
        """Waits (at most SETTLE_S) for each rank's main thread to be back in the engine's read of its command
        channel, where the stop's check expects it (_check_waits): a reply can reach the host while the rank's
        write of it is still returning."""
        deadline = time.monotonic() + SETTLE_S
        for r, pid in self.rank_pids.items():
            fd = self.command_fds.get(r)
            while fd is not None and not watch.reading(pid, fd) and time.monotonic() < deadline:
                time.sleep(0.0001)

    def prove_stop(self) -> None:
        """Refuses the evaluation if anything in the sandbox ran since the host stopped it (freeze_ranks); the stop
        goes on holding. A stop by SIGSTOP is undone by any SIGCONT the kernel generates, and a solution can arrange
        one ahead (a POSIX timer's, an I/O signal's), which no signal mask stops: so the stop is proved when it ends,
        not assumed (thaw_ranks), at the last moment before the command that continues it. The proof reads every
        held thread, about 0.7 ms on one H100's ranks with CUDA's and NCCL's threads: host work inside the solution's
        window, so the baseline's window holds the same reading (evaluator/host/timing_pass.py), which proves the
        stop held through the baseline's inputs too. Without it, honest identical code was refused by the host's
        clock on one H100."""
        if not self.frozen:
            return
        ran = watch.ran_while_held(self._held, self._stopped_pids)
        if ran is None and self.box is not None:
            new = sorted(set(watch.sandbox_processes(self.box.pid)) - set(self._stopped_pids))
            ran = f"process {watch.shown_id(new[0])} appeared" if new else None
        if ran is not None:
            self._continue()
            raise Stop(
                Verdict.REJECTED,
                f"the solution's sandbox ran while the host held it stopped between calls ({ran}): something of "
                f"the solution's continued it (a signal it arranged ahead, a timer's SIGCONT say); nothing of a "
                f"solution may run outside its calls",
            )

    def thaw_ranks(self) -> None:
        """Continues the sandbox's processes, once the stop is proved (prove_stop)."""
        if not self.frozen:
            return
        self.prove_stop()
        self.frozen_ticks += max(0, sum(watch.cpu_ticks(pid) for pid in self._stopped_pids) - self._ticks_at_freeze)
        self._continue()

    def _continue(self) -> None:
        for pid in self._stopped_pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.frozen = False
        self._maps_read.clear()
        self._tables_found.clear()

    # -- ending -------------------------------------------------------------------------------------------
    def close(self) -> None:
        if self.frozen:
            try:
                self._continue()
            except OSError:
                pass
        for fd in self._holds:  # never released: the held sandboxes end without forking a rank
            os.close(fd)
        self._holds = []
        for p in self.judges + self.ranks:
            if p in self.ranks and self.solution_loaded:
                p.send_bytes(compiled_timer.command(compiled_timer.EXIT))
            else:
                p.send(op="exit")
            try:
                p.commands.close()
            except OSError:
                pass
        deadline = time.monotonic() + 3.0
        procs = list(self.judge_procs) + ([self.box] if self.box else [])
        for proc in procs:
            try:
                proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait(timeout=10)
        if self.box is not None:
            # Every process of the sandbox is gone with it (its PID namespace ends with its first process).
            self.escaped = [f"pid {watch.shown_id(p.pid)}: {p.cmdline[:200]}" for p in watch.descendants(self.box.pid)]
        for p in self.judges + self.ranks:
            if not p.reports.closed:
                p.reports.read_available()
            try:
                os.close(p.reports.fd)
            except OSError:
                pass
            if p.samples is not None and p.samples.fd >= 0:
                while p.samples.read_available():
                    pass
                os.close(p.samples.fd)
                p.samples.fd = -1
        for lines in (self.spawner_reports, self.judge_exits):
            if lines is not None:
                try:
                    os.close(lines.fd)
                except OSError:
                    pass
        for fd in self.feed_fds.values():
            os.close(fd)
        self.feed_fds.clear()
        for ends in self.feed_links.values():
            for fd in ends.values():
                os.close(fd)
        self.feed_links.clear()


_PEER_FAILURE_SIGNS = (
    "connection closed by peer",
    "connection reset",
    "remote process exited",
    "aborted",
    "broken pipe",
    "distbackenderror",
    "socket",
    "timed out",
    "peer",
    "gloo",
)


# What a sandboxed rank writes on its report channel (evaluator/rank/worker.py, evaluator/timer/_engine.cpp), and for
# each reply to a command of the host's, the field that names the call it answers (None: the command has no name).
RANK_REPORT_KINDS = frozenset({"booted", "loaded", "error", "finished", "called", "timed", "spun"})
REPLY_KINDS: dict[str, str | None] = {"called": "name", "timed": "i", "spun": None}
ONCE_KINDS = frozenset({"booted", "loaded", "finished"})
# Far above an honest evaluation's reports (a few per call, a few hundred calls).
MAX_RANK_REPORTS = 20_000


def _reply_to(op: int, i: int, flags: int) -> tuple[str, Any] | None:
    """The reply the engine writes to a command (evaluator/timer/_engine.cpp ``serve``)."""
    if op == compiled_timer.TIME:
        return ("timed", i)
    if op == compiled_timer.CALL:
        return ("called", f"t{i}" if flags & compiled_timer.TRIAL_FLAG else "warm")
    if op == compiled_timer.SPIN:
        return ("spun", None)
    return None


def _peer_failure(message: str) -> bool:
    text = message.lower()
    return any(sign in text for sign in _PEER_FAILURE_SIGNS)


def free_port() -> int:
    """A TCP port free on loopback now (for tests and tools that start their own services)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
