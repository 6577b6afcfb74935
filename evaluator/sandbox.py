"""What the launcher does to contain the rank processes of one evaluation (docs/threat-model.md says what this does
not contain).

- A fresh private working directory per evaluation (mode 0700), with the solution's own temp and home inside it,
  removed afterwards; a build cache per solution (keyed by the hash of its source), so a re-run finds its builds
  but no solution reads or plants another's.
- A scrubbed environment (the launcher passes a short allow-list; no tokens or database URLs).
- Resource limits set in the child before it runs Python (``preexec``): CPU seconds, file size, open files, no core
  dumps; address space on CPU profiles (GPU processes map huge virtual ranges, so there only RLIMIT_DATA, and only
  when ARENA_RANK_MEMORY_GB is set); a process count when the ranks run under their own user.
- When the launcher runs as root, the ranks run as an unprivileged user (ARENA_SANDBOX_USER, default ``nobody``),
  provided that user can read the interpreter, the repository and PyTorch; otherwise they stay root and the result
  says why.
- The launcher becomes a child subreaper, so a process a rank starts in a new session (escaping the process-group
  kill) is re-parented to the launcher when its parent dies and is killed when the evaluation ends.
The rank itself adds the audit hook and the integrity checks (evaluator.guard).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import importlib.util
import os
import pwd
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parent.parent
GiB = 1 << 30
_PR_SET_CHILD_SUBREAPER = 36


def solution_cache_key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def cache_root(dropping: bool) -> Path:
    """Where per-solution build caches live: ARENA_CACHE_DIR, else ~/.cache/arena (or /var/tmp/arena-cache when the
    ranks run as another user, who could not reach the launcher's home)."""
    configured = os.environ.get("ARENA_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path("/var/tmp/arena-cache") if dropping else Path.home() / ".cache" / "arena"


def workdir_root() -> str | None:
    """Where evaluations' working directories are made (ARENA_WORKDIR_ROOT, else the system temp directory)."""
    return os.environ.get("ARENA_WORKDIR_ROOT") or None


@dataclass
class Containment:
    """How the ranks of one evaluation are contained; ``record()`` goes into the result document."""

    device: str
    uid: int | None = None  # None: ranks run as the launcher's user
    gid: int | None = None
    user: str = ""
    user_reason: str = ""
    limits: dict[str, tuple[int, int]] = field(default_factory=dict)
    cache_root: Path = Path()
    cache_dir: Path = Path()
    subreaper: bool = False
    leftovers_killed: int = 0  # processes of the ranks' trees still alive after the ranks were killed
    escaped: list[str] = field(default_factory=list)  # ... of which had left their rank's process group

    # -- the child's side ------------------------------------------------------------------------------------
    def preexec(self) -> Callable[[], None]:
        """Runs in the forked child after the user switch and before exec: only setrlimit, nothing that locks."""
        pairs = [(getattr(resource, name), soft, hard) for name, (soft, hard) in self.limits.items()]

        def apply() -> None:
            for which, soft, hard in pairs:
                try:
                    _, cur_hard = resource.getrlimit(which)
                    if cur_hard != resource.RLIM_INFINITY:
                        hard = min(hard, cur_hard)
                        soft = min(soft, hard)
                    resource.setrlimit(which, (soft, hard))
                except (ValueError, OSError):
                    pass

        return apply

    def popen_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"preexec_fn": self.preexec()}
        if self.uid is not None:
            kwargs.update(user=self.uid, group=self.gid, extra_groups=[])
        return kwargs

    # -- the working directory --------------------------------------------------------------------------------
    def prepare(self, workdir: Path) -> dict[str, Any]:
        """Makes the rank's own directories and hands the tree to the sandbox user; returns the ``sandbox`` part
        of the rank's config (what the audit hook lets it write)."""
        os.chmod(workdir, 0o700)
        dirs = [workdir / "solution", workdir / "tmp", workdir / "home"]
        for d in dirs:
            d.mkdir(exist_ok=True)
            os.chmod(d, 0o700)
        self.cache_root.mkdir(parents=True, exist_ok=True)
        self.cache_dir.mkdir(exist_ok=True)
        os.chmod(self.cache_dir, 0o700)
        if self.uid is not None:
            # Others may traverse the cache root (never list it); each solution's cache is its owner's alone.
            os.chmod(self.cache_root, 0o711)
            for path in [workdir, *workdir.rglob("*"), self.cache_dir, *self.cache_dir.rglob("*")]:
                try:
                    os.chown(path, self.uid, self.gid, follow_symlinks=False)
                except OSError:
                    pass
        return {"write_roots": [str(d) for d in dirs[:3]] + [str(self.cache_dir)],
                "cache_dir": str(self.cache_dir), "cache_root": str(self.cache_root)}

    def environment(self, workdir: Path) -> dict[str, str]:
        cache = self.cache_dir
        return {
            "HOME": str(workdir / "home"), "TMPDIR": str(workdir / "tmp"),
            "TORCH_EXTENSIONS_DIR": str(cache / "torch_extensions"), "TRITON_CACHE_DIR": str(cache / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "CUDA_CACHE_PATH": str(cache / "cuda"),
            "XDG_CACHE_HOME": str(cache / "xdg"),
        }

    def record(self) -> dict[str, Any]:
        return {
            "workdir": "fresh private directory (mode 0700) per evaluation, removed afterwards",
            "user": self.user, "user_switched": self.uid is not None, "user_note": self.user_reason,
            "limits": {name: soft for name, (soft, _) in self.limits.items()},
            "environment": "scrubbed (an allow-list of variables); HOME and TMPDIR inside the working directory",
            "build_cache": "per solution (keyed by its source hash)",
            "subreaper": self.subreaper, "leftover_processes_killed": self.leftovers_killed,
            "escaped_processes": self.escaped,
            "not_contained": "native code (C/CUDA extensions, started programs) bypasses the Python-level checks; "
                             "no network namespace — see docs/threat-model.md",
        }


# -- planning ---------------------------------------------------------------------------------------------------

def plan(device: str, timeouts: dict[str, float], source: str, python: str | None = None) -> Containment:
    uid, gid, user, reason = _sandbox_user(device, python or sys.executable)
    total = sum(timeouts.values()) or 600.0
    cpu = int(4 * total + 60)  # NCCL proxy threads and spin-waits burn CPU time beside the wall clock
    limits: dict[str, tuple[int, int]] = {
        "RLIMIT_CPU": (cpu, cpu + 30),
        "RLIMIT_FSIZE": ((4 if device == "cuda" else 1) * GiB,) * 2,
        "RLIMIT_NOFILE": (8192, 8192),
        "RLIMIT_CORE": (0, 0),
    }
    memory_gb = os.environ.get("ARENA_RANK_MEMORY_GB")
    if device != "cuda":
        limits["RLIMIT_AS"] = (int(float(memory_gb or 8) * GiB),) * 2
    elif memory_gb:
        limits["RLIMIT_DATA"] = (int(float(memory_gb) * GiB),) * 2
    if uid is not None:
        # Counts every thread of the user; only meaningful (and only safe) for a user the ranks have to themselves.
        n = int(os.environ.get("ARENA_RANK_MAX_PROCESSES", "4096"))
        limits["RLIMIT_NPROC"] = (n, n)
    root = cache_root(uid is not None)
    return Containment(device=device, uid=uid, gid=gid, user=user, user_reason=reason, limits=limits,
                       cache_root=root, cache_dir=root / solution_cache_key(source))


def _sandbox_user(device: str, python: str) -> tuple[int | None, int | None, str, str]:
    me = pwd.getpwuid(os.geteuid()).pw_name if _has_pwd(os.geteuid()) else str(os.geteuid())
    if os.geteuid() != 0:
        return None, None, me, "the launcher is not root, so the ranks run as its own user"
    name = os.environ.get("ARENA_SANDBOX_USER", "nobody")
    if name in ("", "root"):
        return None, None, "root", "ARENA_SANDBOX_USER is root: the ranks run as root"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None, None, "root", f"no user {name!r} on this host: the ranks run as root"
    gids = set(os.getgrouplist(name, entry.pw_gid))
    blocked = _unreachable(entry.pw_uid, gids, _needed_paths(device, python))
    if blocked:
        return None, None, "root", (f"{name} cannot reach {blocked}: the ranks run as root (give {name} read access "
                                    f"to the interpreter, the repository and PyTorch, or set ARENA_SANDBOX_USER)")
    return entry.pw_uid, entry.pw_gid, name, f"the launcher is root; the ranks run as {name} (uid {entry.pw_uid})"


def _has_pwd(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _needed_paths(device: str, python: str) -> list[tuple[str, int]]:
    """(path, access) pairs the ranks need: 4 read, 1 execute, 2 write."""
    needed = [(os.path.realpath(python), 5), (str(REPO_ROOT / "evaluator" / "rank.py"), 4),
              (os.path.dirname(os.__file__), 5)]
    spec = importlib.util.find_spec("torch")
    if spec and spec.origin:
        needed.append((os.path.dirname(spec.origin), 5))
        needed.append((spec.origin, 4))
    for entry in sys.path:
        if entry.endswith("site-packages") and os.path.isdir(entry):
            needed.append((entry, 5))
    if device == "cuda":
        for dev in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"):
            if os.path.exists(dev):
                needed.append((dev, 6))
    return needed


def _allowed(uid: int, gids: set[int], path: str, want: int) -> bool:
    st = os.stat(path)
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid in gids:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & want == want


def _unreachable(uid: int, gids: set[int], needed: list[tuple[str, int]]) -> str | None:
    for path, want in needed:
        try:
            real = os.path.realpath(path)
            parts = Path(real).parents
            for ancestor in reversed(list(parts)):
                if not _allowed(uid, gids, str(ancestor), 1):
                    return str(ancestor)
            if not _allowed(uid, gids, real, want):
                return real
        except OSError:
            return path
    return None


# -- processes that escape the process group -------------------------------------------------------------------

def become_subreaper() -> bool:
    """Orphaned descendants of the ranks are re-parented to this process rather than to init (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def boot_ticks() -> float:
    """Now, in the clock ticks since boot that /proc/<pid>/stat counts a process's start time in."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")


def _children_since(since: float, ours: set[int]) -> list[tuple[int, int, str]]:
    """(pid, process group, command line) of this process's children that started after ``since`` and are not
    in ``ours``."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in ours:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        ppid, pgid, started = int(fields[1]), int(fields[2]), int(fields[19])
        if ppid == me and started >= since - 1:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
            except OSError:
                cmd = ""
            found.append((int(name), pgid, cmd))
    return found


def kill_leftovers(since: float, ours: set[int]) -> list[tuple[int, int, str]]:
    """Kills (and reaps) this process's children that it did not start itself and that began after ``since``:
    descendants of the ranks re-parented here when their parents died. Repeats until none is left. Returns
    (pid, process group, command line) of each; the caller tells the ones that had left their rank's group."""
    if not sys.platform.startswith("linux"):
        return []
    killed: list[tuple[int, int, str]] = []
    for _ in range(50):
        found = _children_since(since, ours)
        if not found:
            break
        for pid, pgid, cmd in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed.append((pid, pgid, cmd))
        for pid, _, _ in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        time.sleep(0.05)
    return killed
