"""A process cap and a memory cap of its own for every sandbox: a cgroup per sandbox (cgroup v2 with the pids and
memory controllers, or the v1 ``pids`` and ``memory`` hierarchies), joined by the sandbox's launcher before it becomes
bubblewrap, so the caps hold from the sandbox's first instruction (the solution's import included) and count every
process, thread and page in it, whatever its uid — tmpfs pages it writes (/tmp, /dev/shm, the exchange folder) too.
Past the memory cap the kernel's OOM killer ends a process of that sandbox, never one outside it.

A fork past the cap fails with EAGAIN in the sandbox; the cgroup's ``pids.events`` counts the refusals, which
:func:`refusals` reads back for the verdict's message. The cgroups are named by the launcher's pid under
``arena-sandboxes/`` and removed once empty (:func:`sweep`, at every sandbox's start; a cgroup with a process in it
cannot be removed, so a sandbox still running keeps its own). A worker SIGKILLed mid-job leaves only empty cgroups
behind: its sandboxes die with it (``--die-with-parent``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

PARENT = "arena-sandboxes"
SWEEP_AFTER_S = 60.0  # a cgroup younger than this may be about to be joined: never removed, even empty
MODES = ("auto", "required", "off")  # ARENA_PIDS_CGROUP: see docs/operations.md


def mode() -> str:
    value = os.environ.get("ARENA_PIDS_CGROUP", "auto").strip().lower() or "auto"
    return value if value in MODES else "required"


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fstype, super options) of every cgroup file system this process sees."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[4].replace("\\040", " "), tail[0], tail[2]))
    return found


def pids_root() -> Path | None:
    """The folder sandboxes' cgroups go in (made, with the pids controller on for its children), or None when this
    host has no pids controller this process may write to."""
    return _controller_root("pids", "pids.max")


def memory_root() -> Path | None:
    """The folder sandboxes' memory cgroups go in, or None. On cgroup v2 it is the pids one, with the memory
    controller on for its children too."""
    return _controller_root("memory", "memory.limit_in_bytes")


def _controller_root(controller: str, v1_file: str) -> Path | None:
    """Our folder under the hierarchy that has ``controller`` (cgroup v1: its own hierarchy, recognised by
    ``v1_file``; v2: the unified one, the controller switched on for the children of its root and of our folder)."""
    for point, fstype, options in _mounts():
        if fstype == "cgroup" and controller in options.split(","):
            root = Path(point) / PARENT
            try:
                root.mkdir(exist_ok=True)
            except OSError:
                continue
            if (root / v1_file).exists():
                return root
    for point, fstype, _ in _mounts():
        if fstype != "cgroup2":
            continue
        base = Path(point)
        try:
            if controller not in (base / "cgroup.controllers").read_text().split():
                continue
            for folder in (base, base / PARENT):
                folder.mkdir(exist_ok=True)
                if controller not in (folder / "cgroup.subtree_control").read_text().split():
                    (folder / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError:
            continue
        return base / PARENT
    return None


def memory_settings(root: Path, max_bytes: int, tcp_bytes: int) -> dict[str, str]:
    """The files that cap a cgroup under ``root`` at ``max_bytes`` of memory, swap included, and ``tcp_bytes`` of
    socket buffers where the memory controller counts them apart (v1)."""
    if (root / "memory.limit_in_bytes").exists():  # v1
        settings = {"memory.limit_in_bytes": str(max_bytes)}
        if (root / "memory.memsw.limit_in_bytes").exists():
            settings["memory.memsw.limit_in_bytes"] = str(max_bytes)
        if (root / "memory.kmem.tcp.limit_in_bytes").exists():
            settings["memory.kmem.tcp.limit_in_bytes"] = str(min(tcp_bytes, max_bytes))
        return settings
    return {"memory.max": str(max_bytes), "memory.swap.max": "0"}


def sweep(root: Path, older_than_s: float = SWEEP_AFTER_S) -> int:
    """Removes the empty sandbox cgroups made more than ``older_than_s`` ago; returns how many."""
    removed = 0
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < older_than_s:
                continue
            if Path(entry.path, "cgroup.procs").read_text().strip():
                continue
            os.rmdir(entry.path)
            removed += 1
        except OSError:
            continue
    return removed


def join_new(root: Path, settings: dict[str, str]) -> Path:
    """Run in the launcher (the child, before it execs): makes this process's own cgroup under ``root``, writes
    ``settings`` (file name: value) into it, and moves this process into it. Everything it starts stays inside."""
    pid = os.getpid()
    path = root / str(pid)
    n = 0
    while True:
        try:
            path.mkdir()
            break
        except FileExistsError:
            try:
                os.rmdir(path)  # a pid used before, its sandbox long gone
                continue
            except OSError:
                n += 1
                path = root / f"{pid}-{n}"
    for name, value in settings.items():
        try:
            (path / name).write_text(value)
        except FileNotFoundError:
            if name not in OPTIONAL:
                raise
    (path / "cgroup.procs").write_text(str(pid))
    return path


OPTIONAL = ("memory.swap.max", "memory.memsw.limit_in_bytes")  # absent where the host has no swap accounting


def of(pid: int, root: Path | None = None) -> list[Path]:
    """The cgroups the launcher ``pid`` made (in the pids root, or ``root``; the newest last)."""
    root = root if root is not None else pids_root()
    if root is None:
        return []
    found = [p for p in root.glob(f"{pid}*") if p.name == str(pid) or p.name.startswith(f"{pid}-")]
    return sorted(found, key=lambda p: p.stat().st_mtime if p.exists() else 0)


def oom_kills(path: Path) -> int:
    """How many processes the kernel killed in the cgroup at ``path`` for passing its memory cap."""
    for name in ("memory.events", "memory.oom_control"):  # v2, v1
        try:
            for line in (path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return 0


def memory_cap(path: Path) -> int | None:
    for name in ("memory.max", "memory.limit_in_bytes"):
        try:
            return int((path / name).read_text().strip())
        except (OSError, ValueError):
            continue
    return None


def refusals(path: Path) -> int:
    """How many forks the cgroup at ``path`` refused at its cap (``pids.events``: ``max N``)."""
    try:
        for line in (path / "pids.events").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def cap(path: Path) -> int | None:
    try:
        return int((path / "pids.max").read_text().strip())
    except (OSError, ValueError):
        return None
