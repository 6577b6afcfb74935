"""What runs inside one sandbox, read from the host's /proc: the processes under bubblewrap and each rank's
threads. The judge's rules on processes and threads are checked here, outside anything the solution can reach."""

from __future__ import annotations

import bisect
import functools
import hashlib
import os
import platform
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from evaluator.host import engine_sites, unwind
from evaluator.host.engine_sites import ReadSite
from evaluator.host.libc import libc
from evaluator.host.sandbox import is_toolchain_name, program_roots
from evaluator.rank.spawn import rank_name

# Threads that PyTorch, CUDA, NCCL, gloo and Triton start for themselves carry names; a thread a Python program
# starts (threading, concurrent.futures, _thread) carries its process's name on Linux before Python 3.14.
LIBRARY_THREAD_PREFIXES = (
    "pt_",
    "cuda",
    "nccl",
    "NCCL",
    "gloo",
    "torch",
    "triton",
    "c10d",
    "jemalloc",
    "rocm",
    "gdrcopy",
    "nvshmem",
    "cufile",
)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    exe: str
    cmdline: str
    name: str = ""  # /proc/PID/comm


def _read_stat(path: str) -> tuple[str, list[str]] | None:
    """A task's ``stat`` file as (its name, the fields after the name: state first), or None when it is gone."""
    try:
        with open(path, "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    name_end = raw.rfind(")")
    return raw[raw.find("(") + 1 : name_end], raw[name_end + 2 :].split()


def _stat(pid: int) -> tuple[int, str] | None:
    read = _read_stat(f"/proc/{pid}/stat")
    return (int(read[1][1]), read[0]) if read else None


def _children_of_every_process() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        st = _stat(int(entry))
        if st is not None:
            children.setdefault(st[0], []).append(int(entry))
    return children


def _children(pid: int) -> list[int] | None:
    """The processes ``pid``'s threads started, from /proc/PID/task/TID/children; None where the kernel has no such
    file. Orphans in a sandbox are adopted by its first process, so a walk from bubblewrap's process sees them all."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return [] if os.path.exists("/proc/self/task") else None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended between the two reads
            return None
        except OSError:
            continue
    return out


def _walk_down(root: int) -> dict[int, list[int]] | None:
    """Each process under ``root`` (itself included) with its children; None where the kernel cannot say."""
    walked: dict[int, list[int]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        kids = _children(pid)
        if kids is None:
            return None
        walked[pid] = kids
        stack.extend(kids)
    return walked


def _tree(root: int) -> dict[int, list[int]]:
    """Each process under ``root`` with its children. Walking down from the sandbox's root costs what the sandbox
    holds; reading every process of the host (the fallback) costs what the host runs, once per timed iteration."""
    children = _walk_down(root)
    return children if children is not None else _children_of_every_process()


def _below(children: dict[int, list[int]], root: int) -> list[int]:
    out: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        out.append(pid)
    return out


def descendants(root: int) -> list[Proc]:
    out: list[Proc] = []
    for pid in _below(_tree(root), root):
        try:
            # A path is bytes: one that is not UTF-8 (a solution's own file) must not reach a message undecodable.
            exe = os.fsencode(os.readlink(f"/proc/{pid}/exe")).decode(errors="replace")
        except OSError:
            exe = ""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = ""
        st = _stat(pid)
        out.append(Proc(pid, st[0] if st else -1, exe, cmd, st[1] if st else ""))
    return out


def parent(pid: int) -> int | None:
    """``pid``'s parent, or None when it is gone."""
    st = _stat(pid)
    return st[0] if st else None


def _ended(pid: int) -> bool:
    """Whether every thread of ``pid`` has ended or is ending (a zombie its parent has not reaped yet, a process in its
    exit path, or one that is gone): then it runs nothing of its own. Its first thread alone says nothing: one that
    ended by itself (the exit system call, not exit_group) leaves the process a zombie leader with no program or
    command line while its other threads run on (a red team's helper hid so through a whole timing phase)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all(leaving(f"/proc/{pid}/task/{tid}/stat") for tid in tids)


def is_toolchain(proc: Proc) -> bool:
    """A compiler or build tool run from where the host installed it. Its name alone proves nothing: a solution can
    copy any program (the interpreter, say) to /tmp under a compiler's name; every folder it can write to (/tmp,
    /dev/shm, /io, /cache) lies outside the host's read-only program roots. A deleted file is never one."""
    if proc.exe.endswith(" (deleted)"):
        return False
    exe = os.path.normpath(proc.exe)
    roots = program_roots()
    return is_toolchain_name(os.path.basename(exe)) and _under(exe, roots) and not foreign_code(proc.pid, roots)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path.startswith(root.rstrip("/") + "/") for root in roots)


def foreign_code(pid: int, roots: tuple[str, ...]) -> str | None:
    """Executable memory of ``pid`` that the host did not install, or None: a file mapped executable from outside the
    read-only program roots (a library preloaded from /tmp, say), a deleted one, or anonymous executable memory
    (code copied out of such a file before it was unmapped). A genuine compiler or shell has none; the host's own
    shell running a solution's code through LD_PRELOAD does."""
    try:
        with open(f"/proc/{pid}/maps", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 2 or "x" not in parts[1]:
            continue
        path = parts[5] if len(parts) > 5 else ""
        if path in ("[vdso]", "[vsyscall]", "[uprobes]"):
            continue
        if not path or path.endswith(" (deleted)") or not _under(os.path.normpath(path), roots):
            return path or "anonymous executable memory"
    return None


def classify(
    root: int, world_size: int, python_exe: str, spawner: frozenset[int] | None = None, builds: bool = True
) -> tuple[dict[int, int], list[Proc]]:
    """The rank processes in the sandbox (rank -> pid) and every process that is neither bubblewrap, the spawner, a
    rank nor (with ``builds``, while a call may be building) a compiler run from its installed path. ``spawner``: the
    spawner's pid (the ranks' parents), as the host found it before any solution code ran; every other process is
    judged by what it is."""
    procs = descendants(root)
    python = os.path.realpath(python_exe)
    # The sandbox's own bubblewrap is known by what it is, never by its name: the host's program file, and the one
    # process the bubblewrap the host started (``root``) forked as the namespace's first; a program a solution copies
    # under that name (the interpreter at /tmp/bwrap, say) is neither.
    inits = {p.pid for p in procs if p.ppid == root and os.path.realpath(p.exe) == _host_bwrap()}
    # The spawner's look alone proves nothing once the solution has run: a rank's child keeps the spawner's command
    # line and program, and one forked twice is adopted by bubblewrap's first process, as the spawner's parent is.
    spawners = {
        p.pid
        for p in procs
        if " -m evaluator.rank.spawn " in f" {p.cmdline} "
        and os.path.realpath(p.exe) == python
        and p.ppid in inits
        and (spawner is None or p.pid in spawner)
    }
    ranks: dict[int, int] = {}
    strange: list[Proc] = []
    for p in procs:
        if p.pid in inits or p.pid in spawners or (builds and is_toolchain(p)):
            continue
        if not p.exe and not p.cmdline and _ended(p.pid):
            continue  # a process that just exited or is exiting (a rank, a build tool): its exit is judged on its own
        # A rank is a child of the spawner (forked from it, so it runs the interpreter) named for its rank.
        if p.ppid in spawners and os.path.realpath(p.exe) == python:
            r = next((k for k in range(world_size) if p.name == rank_name(k)), -1)
            if r >= 0 and r not in ranks:
                ranks[r] = p.pid
                continue
        strange.append(p)
    return ranks, strange


def threads(pid: int) -> dict[int, str]:
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", errors="replace") as f:
                out[int(tid)] = f.read().strip()
        except OSError:
            continue
    return out


def thread_ids(pid: int) -> set[tuple[int, int]]:
    """Each thread of ``pid`` as (id, start time in clock ticks): an id alone is reused once the host's ids wrap, and a
    thread of the solution's made under the id of a runtime thread that ended would be taken for that thread."""
    out: set[tuple[int, int]] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        start = _started(_read_stat(f"/proc/{pid}/task/{tid}/stat"))
        if start is not None:
            out.add((int(tid), start))
    return out


def _started(read: tuple[str, list[str]] | None) -> int | None:
    """A task's start time in clock ticks, from its ``stat`` file as _read_stat gives it."""
    try:
        return int(read[1][19]) if read else None  # the 22nd field, starttime
    except (IndexError, ValueError):
        return None


# Threads started since the solution loaded that a rank may keep between calls, each judged the runtime's by what it
# runs: NCCL's proxies (one or two a communicator), CUDA's and gloo's own. OpenMP's pool is one thread (OMP_NUM_THREADS
# is 1 in the sandbox). A red team kept 480 threads parked in the C library's pause() across calls: every stop read
# and walked each one's stack, 751 ms an iteration, and the evaluation took 15 times as long and passed. Each thread
# kept still costs the host about 10 file reads a stop (its stop, its proof, its check): bounded here.
MAX_KEPT_THREADS = 64
MAX_VERDICTS = 4 * MAX_KEPT_THREADS * 8  # threads a rank keeps, several ranks, a few places each


def new_solution_threads(
    pid: int,
    before: set[tuple[int, int]],
    verdicts: dict[tuple[object, ...], str] | None = None,
    read_maps: Callable[[int], bytes] | None = None,
) -> list[tuple[int, str]]:
    """Threads of a rank (id, label) that did not exist before the solution was loaded, are not the runtime's and are
    not already leaving (in the kernel's exit path, or ended). A thread is the runtime's by what it runs
    (:func:`what_runs`), whatever it is called: a name is the solution's to choose, and the runtime's own pools
    (OpenMP's workers, started when a solution sets torch's thread count) carry the process's. Only a thread whose
    stack cannot be read (running, with the ranks not stopped) is judged by its name. More than MAX_KEPT_THREADS
    such threads are refused as a whole (the first label says so). ``verdicts``, kept by the caller from stop to
    stop, spares a walk of a thread found the runtime's before, at the same place with the same stack and the same
    mappings (:func:`what_runs`). ``read_maps``: how the process's maps file is read (:func:`read_maps_file` unless the
    caller shares one reading of a stop among its checks)."""
    now = threads(pid)
    main = now.get(pid, "")
    found = []
    kept = [
        (tid, name)
        for tid, name in now.items()
        if not ((tid, _started(read := _read_stat(f"/proc/{pid}/task/{tid}/stat"))) in before or _leaving(read))
    ]
    if len(kept) > MAX_KEPT_THREADS:
        tid, name = kept[0]
        many = f"{name}, one of {len(kept)} threads started since the load where at most {MAX_KEPT_THREADS} may stay"
        return [(tid, many), *kept[1:]]
    if not kept:
        return found
    try:
        maps = _parsed_maps((read_maps or read_maps_file)(pid))
    except OSError:  # the process is gone: it keeps nothing
        return found
    budget = StopBudget()
    for tid, name in kept:
        runs = what_runs(pid, tid, maps, verdicts, budget)
        library_name = name != main and name.startswith(LIBRARY_THREAD_PREFIXES)
        if runs is None:
            if not library_name:
                found.append((tid, name))
        elif runs != RUNTIME_CODE:
            named = "named like a library's thread, " if library_name else ""
            # What the stack holds ("Python code", "code from ..."), or what is wrong with the stack itself.
            found.append((tid, f"{name}, {named}{runs if runs.startswith('a ') else f'with {runs} on its stack'}"))
    return found


def signal_dispositions(pid: int) -> tuple[int, int] | None:
    """A process's caught and ignored signals (``SigCgt``, ``SigIgn`` of /proc/PID/status, bit n-1 for signal n), or
    None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["SigCgt"].strip(), 16), int(fields["SigIgn"].strip(), 16)
    except (OSError, KeyError, ValueError):
        return None


def changed_signals(before: tuple[int, int], now: tuple[int, int]) -> list[str]:
    """The signals whose disposition differs between two :func:`signal_dispositions`, by name."""
    bits = (before[0] ^ now[0]) | (before[1] ^ now[1])
    names = []
    for n in range(1, 65):
        if bits >> (n - 1) & 1:
            try:
                names.append(signal.Signals(n).name)
            except ValueError:
                names.append(f"signal {n}")
    return names


def feed_misuse(
    pid: int,
    own: tuple[int, int] | None,
    others: dict[tuple[int, int], int],
    read_maps: Callable[[int], bytes] | None = None,
    tables: Callable[[int], list[str]] | None = None,
) -> str | None:
    """What a rank holds of the feeds that it should not, in words: a private mapping of its own feed (``own``:
    the file's device and inode), or a descriptor or mapping of another rank's (``others``: file to rank). None when
    none. ``read_maps`` as for :func:`new_solution_threads`; ``tables``: how the process's tables of descriptors are
    found (:func:`descriptor_tables` unless the caller shares one finding of a stop among its checks)."""
    try:
        if own is not None or others:
            maps = (read_maps or read_maps_file)(pid)
            if own is not None and any(_mappings_of(maps, own)):
                return "a private mapping of its feed slot"
            for feed, rank in others.items():
                # A mapping made from a peer's descriptor outlives the descriptor: closed before the stop, it left
                # the peer's slot readable and no descriptor to see.
                if next(_mappings_of(maps, feed), None) is not None:
                    return f"a mapping of rank {rank}'s feed slot"
        for table in (tables or descriptor_tables)(pid):
            for fd in os.listdir(table):
                try:
                    info = os.stat(f"{table}/{fd}")
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) in others:
                    return f"a descriptor of rank {others[(info.st_dev, info.st_ino)]}'s feed slot"
    except (OSError, ValueError):
        return None
    return None


KCMP_SYSCALL = {"x86_64": 312, "aarch64": 272}.get(platform.machine())
KCMP_FILES = 2


def descriptor_tables(pid: int) -> list[str]:
    """The descriptor folders (/proc/PID/task/TID/fd) of every table of descriptors a process's threads hold: the
    process's own, and each thread's that does not share it. A thread made without CLONE_FILES, or one that called
    ``unshare(CLONE_FILES)``, holds a table of its own, which /proc/PID/fd (the first thread's) does not show: a
    descriptor passed to it there was out of the host's sight. Threads are compared by ``kcmp``; where the kernel
    has none, every thread's folder is read."""
    tables = [f"/proc/{pid}/fd"]
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    except (OSError, ValueError):
        return tables
    for tid in tids:
        same = libc().syscall(KCMP_SYSCALL, pid, tid, KCMP_FILES, 0, 0) if KCMP_SYSCALL is not None else -1
        if same != 0:
            tables.append(f"/proc/{pid}/task/{tid}/fd")
    return tables


def _mappings_of(maps: bytes, file: tuple[int, int]) -> Iterator[bool]:
    """Whether each mapping of ``file`` (device, inode) in a maps file's bytes is private. The bytes are searched for
    the inode first: a CUDA rank maps thousands of regions, and this runs at every stop; only the lines naming the
    inode are parsed."""
    token = b" " + str(file[1]).encode() + b" "
    at = maps.find(token)
    while at >= 0:
        start = maps.rfind(b"\n", 0, at) + 1
        end = maps.find(b"\n", at)
        parts = maps[start : end if end >= 0 else len(maps)].split(maxsplit=5)
        if len(parts) >= 5 and int(parts[4]) == file[1]:
            major, minor = (int(v, 16) for v in parts[3].split(b":"))
            if os.makedev(major, minor) == file[0]:
                yield parts[1][3:4] == b"p"
        at = maps.find(token, at + 1)


def thread_cpu_ns(pid: int, tid: int) -> int | None:
    """The CPU time a thread has used, in ns (/proc/PID/task/TID/schedstat), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", errors="replace") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def still_there(pid: int, found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Those of ``found`` (threads of ``pid``: id, label) that have not ended or begun to."""
    return [(tid, label) for tid, label in found if not leaving(f"/proc/{pid}/task/{tid}/stat")]


# What the host reads of one kept thread's stack, from its stack pointer to its mapping's end. A runtime's thread holds
# a few KB there (4.2 KB for every CUDA, NCCL and gloo thread of one H100's rank, 21 KB for the TCP store's on CPU); a
# ninth red team put libc threads' stacks at the bottom of 8 MiB mappings, and every stop read, hashed and scanned 8
# MiB a thread (6.2 s of the host's checks an iteration).
STACK_READ = 256 << 10
# All of one rank's kept threads together, read at one stop.
KEPT_STACK_BYTES = 512 << 10
# Frames walked of all of one rank's kept threads at one stop (each costs the host about 0.1 ms where its address is
# new): a tenth red team's 60 threads a rank on chains of libc return addresses, new at every call, cost 650 ms of the
# host's checks an iteration. A runtime keeps a few new threads of 4 to 13 frames; past this, a thread's every word
# counts.
WALKED_FRAMES = 256
_KERNEL_MAPPINGS = ("[vdso]", "[vsyscall]")
RUNTIME_CODE = "the host's libraries only"
# Where a thread outside Python asks for the GIL. The engine keeps the GIL from a call's return to the next window, so
# a runtime's thread that must enter Python (torch freeing a tensor's Python object in gloo's worker, a Python
# callback on a future) waits there at a stop: it has run no Python, and runs it in the next window.
GIL_ENTRIES = ("PyEval_AcquireThread", "PyEval_RestoreThread", "PyGILState_Ensure")


@dataclass
class StopBudget:
    """What the host reads of one rank's kept threads at one stop, shared by them: their stacks' bytes (past which the
    thread that crosses the line is refused) and the frames it walks (past which every word of a stack counts)."""

    stack_bytes: int = KEPT_STACK_BYTES
    frames: int = WALKED_FRAMES


def what_runs(
    pid: int,
    tid: int,
    maps: ProcessMaps | None = None,
    verdicts: dict[tuple[object, ...], str] | None = None,
    budget: StopBudget | None = None,
) -> str | None:
    """What a thread runs, from where it is and every return address of its live frames: :data:`RUNTIME_CODE` when
    all of it is in the host's installed libraries; else what no runtime thread runs, "Python code" (the interpreter:
    a library's threads are native) or "code from ..." (outside the host's program roots: a solution's own native
    code, executable memory of no file). None when it cannot be read: a thread running in user space (no stack
    pointer to read until it is stopped; every timed iteration's check runs with the ranks stopped), or gone.

    The frames are walked by their code's call-frame information (:mod:`evaluator.host.unwind`), so what an ended
    thread left in the slots of a reused stack is not taken for a caller. Above a frame the walk cannot pass, and
    above the last frame of a walk that ended, every word of the stack counts as a return address too.

    ``maps``: the process's mappings, read once for all its threads (else read here). ``verdicts``: a thread found
    the runtime's by a walk is found so again without one while its place (the system call,
    its arguments, its registers), its stack's bytes and the process's mappings are what they were: the walk reads
    nothing else of the thread's. ``budget`` (:class:`StopBudget`, shared by a rank's threads at one stop): once its
    frames are spent no thread is walked and every word of its stack counts, which refuses more, never less.
    """
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall", errors="replace") as f:
            place = f.read()
        fields = place.split()
        if not fields or fields[0] == "running" or len(fields) < 3:
            return None
        sp, pc = int(fields[-2], 16), int(fields[-1], 16)
        maps = maps or process_maps(pid)
        code, stack_end = maps.code, maps.end_of(sp)
        if stack_end is None:
            # A thread stopped in a system call has its stack pointer in its stack; one outside every mapping was
            # set there by code of the thread's own, to leave nothing to read.
            return "a stack pointer outside its memory"
        if stack_end - sp > STACK_READ:
            # No runtime thread lives this deep: a stack pushed past what the host reads would hide what is above.
            return f"a live stack of {(stack_end - sp) >> 10} KiB, deeper than the host reads"
        if budget is not None:
            budget.stack_bytes -= stack_end - sp
            if budget.stack_bytes < 0:
                return f"a live stack past the {KEPT_STACK_BYTES >> 10} KiB the host reads of a rank's kept threads"
        data = _memory(pid, sp, stack_end - sp)
    except (OSError, ValueError):
        return None
    key = (pid, tid, place, maps.digest, hashlib.blake2b(data, digest_size=16).digest())
    if verdicts is not None and verdicts.get(key) == RUNTIME_CODE:
        return RUNTIME_CODE
    interpreter = os.path.realpath(f"/proc/{pid}/exe")
    roots = tuple(r.rstrip("/") + "/" for r in program_roots())
    starts = maps.starts
    if budget is not None and budget.frames <= 0:
        frames = unwind.Frames([pc], sp, False)
    else:
        frames = unwind.live_frames(pid, sp, pc, data, code)
        if budget is not None:
            budget.frames -= len(frames.addresses)
    if frames.interrupted is not None:
        # No runtime thread is parked in a signal's handler at a stop. And where it was when the signal came (the
        # kernel's record of the interrupted context) lies in memory the thread itself can write: an eleventh red
        # team pointed it at zeros to hide a Python thread, and at deep mappings, read past every budget at every
        # stop, to cost the host 2 s of checks an iteration.
        return "a signal's handler frame (a thread parked in a handler, where no runtime thread waits)"
    values = frames.addresses + _words(data[max(0, frames.every_word_from - sp) // 8 * 8 :])
    waiting = _waiting_for_the_gil(pid, frames.addresses, code, starts, interpreter)
    # The frames' own addresses one by one (the innermost may be the interpreter's, asking for the GIL); the words
    # above them, tens of thousands, sorted once and looked up mapping by mapping.
    for k, value in enumerate(values[: len(frames.addresses)]):
        at = bisect.bisect_right(starts, value) - 1
        if at >= 0 and value < code[at].end and (k >= waiting or not _is_interpreter(code[at].path, interpreter)):
            verdict = _code_verdict(code[at].path, interpreter, roots)
            if verdict is not None:
                return verdict
    words = sorted(values[len(frames.addresses) :])
    for mapping, verdict in maps.foreign_code(interpreter, roots):
        if bisect.bisect_left(words, mapping.start) < bisect.bisect_left(words, mapping.end):
            return verdict
    if verdicts is not None:
        if len(verdicts) >= MAX_VERDICTS:
            verdicts.clear()
        verdicts[key] = RUNTIME_CODE
    return RUNTIME_CODE


def _code_verdict(path: str, interpreter: str, roots: tuple[str, ...]) -> str | None:
    """What a return address into the executable mapping of ``path`` says a thread runs, or None for the host's
    installed libraries and the kernel's own mappings."""
    if _is_interpreter(path, interpreter):
        return "Python code"
    if path in _KERNEL_MAPPINGS:
        return None
    if not path or path.startswith("[") or path.endswith(" (deleted)") or not path.startswith(roots):
        return f"code from {path or 'executable memory of no file'}"
    return None


def _waiting_for_the_gil(
    pid: int, frames: list[int], code: list[unwind.Mapping], starts: list[int], interpreter: str
) -> int:
    """How many of a thread's innermost frames are the interpreter's acquiring the GIL for native code: its frames in
    the interpreter must be one run, from the first or right after the C library's, whose outermost returns into one
    of GIL_ENTRIES, with no other frame of the interpreter's further out (a Python thread waiting for the GIL has the
    interpreter's evaluation there). 0 when the thread is not only waiting for it."""
    inside, libc = [], []
    for k, value in enumerate(frames):
        at = bisect.bisect_right(starts, value) - 1
        if at >= 0 and value < code[at].end:
            path = code[at].path
            if _is_interpreter(path, interpreter):
                inside.append((k, value - code[at].start + code[at].offset, code[at]))
            elif os.path.basename(path).startswith(("libc.so", "libpthread.so")):
                libc.append(k)
    if not inside or [k for k, _, _ in inside] != list(range(inside[0][0], inside[-1][0] + 1)):
        return 0
    if libc[: inside[0][0]] != list(range(inside[0][0])):  # the GIL's wait, in the C library, and nothing else
        return 0
    last, offset, mapping = inside[-1]
    try:
        # Through the process's own link to the file it maps: the path names it in the sandbox's view.
        entries = engine_sites.function_extents(f"/proc/{pid}/map_files/{mapping.start:x}-{mapping.end:x}", GIL_ENTRIES)
    except OSError:
        return 0
    # A return address is the instruction after the call: the call itself lies in the entry.
    if not any(start < offset <= end for start, end in entries):
        return 0
    return last + 1


def _is_interpreter(path: str, interpreter: str) -> bool:
    """Whether a mapped file is Python's own code: the process's program, or a shared libpython."""
    return path == interpreter or os.path.basename(path).startswith("libpython")


def _memory(pid: int, address: int, length: int) -> bytes:
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        return os.pread(fd, length, address)
    finally:
        os.close(fd)


def _words(data: bytes) -> list[int]:
    """``data`` read as 64-bit words in the host's order (little-endian on the machines profiles name), as a stack
    holds addresses; a last partial word is left out."""
    return memoryview(data)[: len(data) // 8 * 8].cast("Q").tolist()


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(platform.machine(), 0)


def waits_for_command(
    pid: int, command_fd: int, engine: str, engine_inode: int, site: ReadSite
) -> tuple[bool | None, str]:
    """Whether a stopped rank's main thread waits where the engine waits between two of the host's commands: blocked
    in the engine's own read of its command descriptor (``site``, read from the engine's file, whose path in the rank
    is ``engine`` and whose inode is ``engine_inode``), with serve()'s call of it as the return address on x86_64.
    (None, "") when it cannot be told: the thread was stopped on its way to that read (in user space, or in another
    system call: the write of its reply, say). (False, what it does instead) when it reads from anywhere else: a
    solution whose call never returned and that answers the host's commands itself, through a copy of the engine,
    Python or code of its own, or through the engine's read called from code of its own, reads them elsewhere."""
    try:
        with open(f"/proc/{pid}/task/{pid}/syscall", errors="replace") as f:
            fields = f.read().split()
        if not fields or fields[0] in ("running", "-1") or len(fields) < 3:
            return None, ""
        nr, sp, pc = int(fields[0]), int(fields[-2], 16), int(fields[-1], 16)
        if nr != READ_SYSCALL:
            return None, ""
        if int(fields[1], 16) != command_fd:
            return False, f"its main thread was reading descriptor {int(fields[1], 16)}, not its command channel"
        if _engine_offset(pid, pc, engine, engine_inode) != site.after_syscall:
            return False, f"its main thread read the command channel from {_named(pid, pc)}"
        if platform.machine() != "x86_64":
            return True, ""  # aarch64 keeps the return address in a register /proc does not show
        mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        try:
            back = int.from_bytes(os.pread(mem, 8, sp), "little")
        finally:
            os.close(mem)
    except (OSError, ValueError):
        return None, ""
    if _engine_offset(pid, back, engine, engine_inode) not in site.returns:
        return (
            False,
            f"its main thread read the command channel through the engine's read, called from {_named(pid, back)}",
        )
    return True, ""


# Per rank process (pid, start time): its engine's mappings, as (start, end, file offset, inode, executable). Parsing
# a CUDA process's whole memory map takes milliseconds; a range found there is checked again at every use through
# /proc/PID/map_files, so code mapped over it afterwards is not taken for it.
_ENGINE_CODE: dict[tuple[int, str], list[tuple[int, int, int, int, bool]]] = {}


def _engine_ranges(pid: int, engine: str, engine_inode: int) -> list[tuple[int, int, int, int, bool]]:
    """The engine's mappings in process ``pid`` (start, end, file offset, inode, executable), read once per process;
    [] when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", errors="replace") as f:
            started = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return []
    key = (pid, started)
    if key not in _ENGINE_CODE:
        if len(_ENGINE_CODE) > 256:
            _ENGINE_CODE.clear()
        ranges = []
        try:
            with open(f"/proc/{pid}/maps", errors="replace") as f:
                for line in f:
                    parts = line.split(maxsplit=5)
                    if len(parts) > 5 and parts[5].rstrip("\n") == engine:
                        a, b = (int(v, 16) for v in parts[0].split("-"))
                        # The inode as the map file's link gives it: the map's own column can differ from it (an
                        # overlay file system shows its lower file's there), and every later check reads the link.
                        try:
                            inode = os.stat(f"/proc/{pid}/map_files/{a:x}-{b:x}").st_ino
                        except OSError:
                            continue
                        if int(parts[4]) == engine_inode or inode == engine_inode:
                            ranges.append((a, b, int(parts[2], 16), inode, "x" in parts[1]))
        except OSError:
            return []
        if not ranges:
            return []  # not mapped yet: read again at the next use rather than remembered empty
        _ENGINE_CODE[key] = ranges
    return _ENGINE_CODE[key]


def _engine_offset(pid: int, address: int, engine: str, engine_inode: int) -> int | None:
    """The offset in the engine's file of the code at ``address`` in process ``pid``; None when no mapping of the
    engine's file (that inode, at that path) holds it now."""
    for a, b, offset, inode, executable in _engine_ranges(pid, engine, engine_inode):
        if executable and a <= address < b:
            try:
                same = os.stat(f"/proc/{pid}/map_files/{a:x}-{b:x}").st_ino == inode
            except OSError:
                return None
            return address - a + offset if same else None
    return None


def command_channel(pid: int, command_fd: int) -> str | None:
    """The pipe a rank's command descriptor is open on ("pipe:[inode]"), None when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/fd/{command_fd}")
    except OSError:
        return None


def command_copies(
    pid: int, command_fd: int, channels: set[str], tables: Callable[[int], list[str]] | None = None
) -> list[int]:
    """Descriptors of process ``pid`` other than its ``command_fd`` open on one of ``channels`` (every rank's command
    pipe): a copy of a command channel got without a system call the channel lock sees (one passed over a Unix
    socket, to the rank itself or to a peer), for another thread to read the host's commands from. ``tables`` as for
    :func:`feed_misuse`."""
    copies = set()
    for table in (tables or descriptor_tables)(pid):
        try:
            names = os.listdir(table)
        except OSError:
            continue
        own = table == f"/proc/{pid}/fd"
        for name in names:
            # The command descriptor's number in another thread's table is a copy too.
            if name.isdigit() and not (own and int(name) == command_fd):
                try:
                    if os.readlink(f"{table}/{name}") in channels:
                        copies.add(int(name))
                except OSError:
                    continue
    return sorted(copies)


def engine_code_changed(
    pid: int, engine: str, engine_inode: int, built: bytes, constant: list[tuple[int, int]]
) -> str | None:
    """Where the engine's code or constant data in a stopped rank differs from ``built`` (the file the host built,
    whose path in the rank is ``engine``), or None when every byte of them is the file's: a solution that made the
    engine's pages writable and patched serve() or a step (its checks, its reports' text) changed them. ``constant``:
    the file's extents that are never written once loaded (engine_sites.constant_extents); the page past the file's
    end reads as zeros."""
    ranges = _engine_ranges(pid, engine, engine_inode)
    if not ranges:
        return None if not os.path.exists(f"/proc/{pid}") else "the engine is not mapped"
    try:
        mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None  # the process is gone: its exit is the host's to read
    try:
        for a, b, offset, _, _ in ranges:
            for lo, hi in constant:
                first, last = max(offset, lo), min(offset + (b - a), hi)
                if first >= last:
                    continue
                try:
                    now = os.pread(mem, last - first, a + first - offset)
                except OSError:
                    return None if not os.path.exists(f"/proc/{pid}") else f"the engine at {first:#x} is unreadable"
                expected = built[first:last]
                expected += bytes(len(now) - len(expected))
                if now != expected:
                    at = next(k for k in range(len(now)) if now[k] != expected[k])
                    return f"the engine at offset {first + at:#x} differs from the file the host built"
    finally:
        os.close(mem)
    return None


def engine_fixed(pid: int, engine: str, engine_inode: int, extents: list[tuple[int, int]]) -> bytes | None:
    """The bytes of the engine's fixed extents (engine_sites.fixed_extents: its table of library addresses, its
    driver table, what it set when opened) in process ``pid``, read through /proc/PID/mem; None when they cannot be
    read (the process is gone, or the engine is not mapped)."""
    return _engine_bytes(pid, engine, engine_inode, extents)


def engine_serving(pid: int, engine: str, engine_inode: int, flag: int) -> bool | None:
    """Whether the engine's re-entry guard (engine_sites.serving_flag) is set in process ``pid``: from serve()'s start
    on it is, so a rank stopped after a reply whose guard is clear had it cleared, to call the engine's steps from
    inside its own call. None when it cannot be read."""
    held = _engine_bytes(pid, engine, engine_inode, [(flag, flag + 1)])
    return None if held is None else held != b"\0"


def _engine_bytes(pid: int, engine: str, engine_inode: int, extents: list[tuple[int, int]]) -> bytes | None:
    base = next((a for a, _, offset, _, _ in _engine_ranges(pid, engine, engine_inode) if offset == 0), None)
    if base is None:
        return None
    try:
        mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        return b"".join(os.pread(mem, end - start, base + start) for start, end in extents)
    except OSError:
        return None
    finally:
        os.close(mem)


def _named(pid: int, address: int) -> str:
    """The file whose code holds ``address`` in process ``pid``, for a message."""
    try:
        with open(f"/proc/{pid}/maps", errors="replace") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                a, b = (int(v, 16) for v in parts[0].split("-"))
                if a <= address < b:
                    path = parts[5].rstrip("\n") if len(parts) > 5 else ""
                    if "x" not in parts[1]:
                        return "memory that holds no code"
                    return path or "executable memory of no file"
    except (OSError, ValueError):
        pass
    return "memory of no mapping"


def reading(pid: int, fd: int) -> bool:
    """Whether a process's main thread is blocked in ``read`` of descriptor ``fd`` (False while it runs)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/syscall", errors="replace") as f:
            fields = f.read().split()
        return len(fields) > 1 and fields[0] == str(READ_SYSCALL) and int(fields[1], 16) == fd
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class ProcessMaps:
    """A process's mappings as one reading of /proc/PID/maps gives them: the executable ones, sorted (``code``, with
    their ``starts``), every mapping's extent, sorted, and a digest of the executable ones."""

    code: list[unwind.Mapping]
    starts: list[int]
    extents: list[tuple[int, int]]
    digest: bytes
    # The executable mappings no runtime code lies in, with what each says, by (interpreter, roots): worked out once
    # for all of a process's threads (a tenth red team mapped 40,000 pieces of an installed library).
    foreign: dict[tuple[str, tuple[str, ...]], list[tuple[unwind.Mapping, str]]] = field(
        default_factory=dict, compare=False
    )

    def foreign_code(self, interpreter: str, roots: tuple[str, ...]) -> list[tuple[unwind.Mapping, str]]:
        key = (interpreter, roots)
        if key not in self.foreign:
            self.foreign[key] = [
                (m, verdict) for m in self.code if (verdict := _code_verdict(m.path, interpreter, roots)) is not None
            ]
        return self.foreign[key]

    def end_of(self, address: int) -> int | None:
        """The end of the mapping that holds ``address``, or None when none does."""
        at = bisect.bisect_right(self.extents, (address, 1 << 64)) - 1
        return self.extents[at][1] if at >= 0 and address < self.extents[at][1] else None


def read_maps_file(pid: int) -> bytes:
    """A process's /proc/PID/maps, whole (OSError: it is gone)."""
    with open(f"/proc/{pid}/maps", "rb") as f:
        return f.read()


def process_maps(pid: int) -> ProcessMaps:
    """One reading of a process's mappings (OSError: it is gone). Read once for all of a process's threads at a stop:
    a rank that split its memory into 20,000 mappings made each thread's reading cost tens of milliseconds."""
    return _parsed_maps(read_maps_file(pid))


_EXTENT = re.compile(rb"^([0-9a-f]+)-([0-9a-f]+) ", re.M)
_EXECUTABLE = re.compile(rb"^([0-9a-f]+)-([0-9a-f]+) ..x. ([0-9a-f]+) \S+ \d+ *(.*)$", re.M)


@functools.lru_cache(maxsize=16)
def _parsed_maps(raw: bytes) -> ProcessMaps:
    """``raw`` (a maps file's bytes) parsed: by the regular expressions' scans, and once for a reading seen before (a
    rank's mappings seldom change between two stops)."""
    extents = [(int(a, 16), int(b, 16)) for a, b in _EXTENT.findall(raw)]
    extents.sort()
    # Of the executable mappings alone (their extents, files and offsets): the allocator maps and unmaps data between
    # any two stops, which changes nothing a thread's walk reads.
    digest = hashlib.blake2b(digest_size=16)
    code = []
    for m in _EXECUTABLE.finditer(raw):
        digest.update(m.group(0) + b"\n")
        code.append(unwind.Mapping(int(m[1], 16), int(m[2], 16), int(m[3], 16), m[4].decode(errors="replace")))
    code.sort(key=lambda c: c.start)
    return ProcessMaps(code, [c.start for c in code], extents, digest.digest())


def _code_mappings(pid: int, sp: int) -> tuple[list[unwind.Mapping], int | None]:
    """A process's executable mappings, sorted, and the end of the mapping that holds ``sp``."""
    maps = process_maps(pid)
    return maps.code, maps.end_of(sp)


PF_EXITING = 0x4  # include/linux/sched.h: the task is in its exit path


def leaving(stat_path: str) -> bool:
    """Whether the task whose ``stat`` file this is has ended or is ending (gone, a zombie, or in the exit path)."""
    return _leaving(_read_stat(stat_path))


def _leaving(read: tuple[str, list[str]] | None) -> bool:
    if read is None:
        return True
    try:
        return read[1][0] in ("Z", "X") or bool(int(read[1][6]) & PF_EXITING)
    except (IndexError, ValueError):
        return False


def sandbox_processes(root: int) -> list[int]:
    """Every process under the sandbox's root but bubblewrap's own: the processes a stop must hold."""
    # The pids alone, and one program file read (of bubblewrap's children): the host asks this several times an
    # iteration, and descendants() reads every process's program and command line.
    children = _tree(root)
    own = {pid for pid in children.get(root, []) if _program(pid) == _host_bwrap()}
    return [pid for pid in _below(children, root) if pid not in own]


def _program(pid: int) -> str:
    """The program file ``pid`` runs, its links resolved ('' when it is gone)."""
    try:
        return os.path.realpath(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _host_bwrap() -> str:
    """The host's bubblewrap program file (looked up once: the host walks the sandbox after every call)."""
    return os.path.realpath(shutil.which("bwrap") or "/nonexistent/bwrap")


def inner_id(pid: int, tid: int) -> int | None:
    """The thread's id inside the sandbox's PID namespace (the last of /proc's NSpid), as the rank itself knows it."""
    try:
        with open(f"/proc/{pid}/task/{tid}/status", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def shown_id(pid: int, tid: int | None = None) -> str:
    """How a result names a process or thread of the sandbox: by its id inside the sandbox, never the host's (the
    host's ids count every process the host started, other evaluations' too)."""
    inner = inner_id(pid, pid if tid is None else tid)
    return str(inner) if inner is not None else "?"


def _state(path: str) -> str:
    """A task's one-letter state from its ``stat`` file ('' when it is gone)."""
    read = _read_stat(path)
    return read[1][0] if read and read[1] else ""


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (by SIGSTOP), has ended, or the process is gone: a stopped process
    runs nothing until it is continued. A thread leaving (in the kernel's exit path) is not stopped by SIGSTOP, so it
    counts as running until it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all(_state(f"/proc/{pid}/task/{tid}/stat") in ("T", "t", "Z", "X", "") for tid in tids)


def held_threads(pids: list[int], off_cpu: bool = True) -> dict[tuple[int, int], tuple[int, int]] | None:
    """What every stopped thread of ``pids`` has run, by (pid, tid): its CPU time (ns) and how many times it was put on
    a CPU (_runs), to compare with the same when the stop ends. With ``off_cpu``, None while a thread is stopped but
    not yet off its CPU (its state is set before its last switch, whose time its count takes only then). A thread
    already ending (a zombie) is left out: it may go meanwhile."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for pid, tid in _tasks(pids):
        if _state(f"/proc/{pid}/task/{tid}/stat") not in ("T", "t"):
            continue
        if off_cpu and _on_its_way_off(pid, tid):
            return None
        runs = _runs(pid, tid)
        if runs is not None:
            out[(pid, tid)] = runs
    return out


def _runs(pid: int, tid: int) -> tuple[int, int] | None:
    """A thread's CPU time (ns) and the number of times it was put on a CPU (/proc/PID/task/TID/schedstat); the second
    rises as a thread is put on a CPU, the first only when it leaves one or at a tick. None when it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", errors="replace") as f:
            fields = f.read().split()
        return int(fields[0]), int(fields[2])
    except (OSError, ValueError, IndexError):
        return None


def _tasks(pids: list[int]) -> list[tuple[int, int]]:
    """Every thread of ``pids`` now, as (pid, tid); a process that is gone has none."""
    out = []
    for pid in pids:
        try:
            out += [(pid, int(name)) for name in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
    return out


def _on_its_way_off(pid: int, tid: int) -> bool:
    """Whether a stopped thread is still queued to run (the kernel names no place it waits, "0", until it is off its
    run queue: Linux 5.16 and later). Unreadable, or a kernel that names no place for any thread: not known, taken as
    off."""
    return wchan_names_stops() and _wchan(f"/proc/{pid}/task/{tid}/wchan") == "0"


def _wchan(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def wchan_names_stops() -> bool:
    """Whether this kernel names where a stopped thread waits (without symbols it says "0" for every thread, and the
    host would wait for each stop's threads to leave their CPUs until its deadline): asked once, of a process of the
    host's own."""
    try:
        proc = subprocess.Popen(["sleep", "30"])
    except OSError:
        return False
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if _state(f"/proc/{proc.pid}/stat") == "T" and _wchan(f"/proc/{proc.pid}/wchan") not in ("", "0"):
                return True
            time.sleep(0.001)
        return False
    finally:
        proc.kill()
        proc.wait()


def ran_while_held(held: dict[tuple[int, int], tuple[int, int]], pids: list[int]) -> str | None:
    """What of ``pids`` ran since ``held`` (held_threads) was read, in words, or None. A stopped thread runs nothing,
    so a held thread that was put on a CPU again, gained CPU time, is no longer stopped or ended, and any thread that
    appeared, means something continued its process: a signal arranged ahead (a timer's SIGCONT continues a stopped
    process whatever its signal mask)."""
    now = {(pid, tid): _runs(pid, tid) for pid, tid in _tasks(pids)}
    for (pid, tid), runs in sorted(now.items()):
        before = held.get((pid, tid))
        state = _state(f"/proc/{pid}/task/{tid}/stat")
        if before is None:
            if state not in ("Z", "X", ""):
                return f"thread {shown_id(pid, tid)} appeared"
            continue
        if runs is not None and runs[0] > before[0]:
            return f"thread {shown_id(pid, tid)} used {(runs[0] - before[0]) / 1e6:.3f} ms of CPU"
        if (runs is not None and runs[1] > before[1]) or state not in ("T", "t", ""):
            return f"thread {shown_id(pid, tid)} was put on a CPU again"
    gone = sorted(key for key in held if now.get(key) is None)
    if gone:
        return f"thread {shown_id(*gone[0])} ended"
    return None


def running_threads(pid: int) -> list[str]:
    """The threads of ``pid`` that are not stopped, as 'TID (name, state)', each TID as the sandbox knows it."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        state = _state(f"/proc/{pid}/task/{tid}/stat")
        if state not in ("T", "t", "Z", "X", ""):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm", errors="replace") as f:
                    name = f.read().strip()
            except OSError:
                name = "?"
            out.append(f"{shown_id(pid, int(tid))} ({name}, {state})")
    return out


def cpu_ticks(pid: int) -> int:
    """The CPU time every thread of ``pid`` has used, user and system, in clock ticks (0 when it is gone)."""
    read = _read_stat(f"/proc/{pid}/stat")
    return int(read[1][11]) + int(read[1][12]) if read else 0
