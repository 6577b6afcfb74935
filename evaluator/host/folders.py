"""Removing an evaluation's folders, whatever the solution left in them, and whatever a worker that ended without
removing its own left behind."""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from evaluator.host.libc import libc

logger = logging.getLogger("arena.evaluate")


def remove_tree(path: Path) -> None:
    """Removes ``path`` and everything below it, never raising: the folders held what the sandbox wrote, and a tree
    thousands of levels deep (which Python's own removal walks by recursion, and fails on) must neither stay on the
    host nor turn a verdict into the evaluator's failure. ``rm`` walks any depth; what it cannot remove is logged."""
    if not Path(path).exists():
        return
    rm = shutil.which("rm")
    if rm is not None:
        done = subprocess.run(
            [rm, "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return
        logger.warning("could not remove %s: %s", path, done.stderr.strip()[:500])
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        logger.warning("could not remove %s: its folders nest too deep", path)


SHM_MIN_FREE = 8 << 30


def workdir_root() -> str | None:
    """Where jobs' folders are made (evaluations, builds, proposal checks): ARENA_WORKDIR_ROOT, else /dev/shm when it
    has room (every input and output of an evaluation passes through files there, and memory is much faster than
    disk), else the system default."""
    configured = os.environ.get("ARENA_WORKDIR_ROOT")
    if configured:
        return configured
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= SHM_MIN_FREE and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


_MNT_DETACH = 2
# A job's folder names the worker that made it, so that a worker starting later can tell one whose maker has ended.
_ABANDONED = re.compile(r"^arena-(?:eval|build|check)-(\d+)-")


def job_folder_prefix(kind: str) -> str:
    """The prefix of a job's folder (``kind``: "eval", "build" or "check") made by this process."""
    return f"arena-{kind}-{os.getpid()}-"


def unmount(path: Path) -> bool:
    """Unmounts what is mounted at ``path`` (lazily: a process still holding it lets go later); True when nothing is
    mounted there any more."""
    if not os.path.ismount(path):
        return True
    if libc().umount2(os.fsencode(path), _MNT_DETACH) != 0:
        logger.warning("could not unmount %s: %s", path, os.strerror(ctypes.get_errno()))
        return False
    return True


def reap_abandoned(root: str | Path) -> int:
    """Removes the job folders under ``root`` whose worker has ended (killed, say, in the middle of a job), the file
    systems mounted in them first (a job's build cache is one, in memory: evaluator/host/job_cache.py). Returns how
    many it removed. A folder of a worker still running is left alone, whoever runs this."""
    removed = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        match = _ABANDONED.match(name)
        if match is None or _alive(int(match[1])):
            continue
        folder = Path(root) / name
        mounted = sorted(
            (p for p in _mount_points() if p == folder or folder in p.parents), key=lambda p: -len(p.parts)
        )
        if all([unmount(p) for p in mounted]):
            remove_tree(folder)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mount_points() -> list[Path]:
    with open("/proc/self/mounts") as f:
        # Spaces and the like in a mount point are written as octal escapes.
        return [Path(line.split()[1].encode().decode("unicode_escape")) for line in f if len(line.split()) > 1]
