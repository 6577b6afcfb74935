"""The OS sandbox of one evaluation, with bubblewrap: every rank of the solution in one sandbox.

Inside: private network (loopback only, for the ranks' own rendezvous), PID, IPC and UTS namespaces; an unprivileged
uid that is not the judge's; the system, the interpreter and its site-packages read-only; the evaluator's runtime
(rank worker, timer, wire format — never the problems or the judge) read-only at /arena; the solution read-only at
/solution; the exchange folder at /io; the solution's own build cache at /cache; a size-capped tmpfs at /tmp (its
home and working directory). Nothing else of the host: not the repository, the database, var/, .env, other
evaluations, /root or /home. ``--die-with-parent``: the sandbox dies with the worker, also on SIGKILL.

Limits of its own from its first instruction (docs/threat-model.md, "Limits"): a system-call filter
(``evaluator.host.seccomp``: no new namespaces, user namespaces included, no mounts, keyring, bpf, ptrace...), a pids
cgroup per sandbox (``evaluator.host.cgroups``), and the rlimits of :func:`limits`.

When bubblewrap is missing or cannot start, :func:`probe` says what is missing and the evaluation ends as
``infra_error``; solution code never runs outside the sandbox."""

from __future__ import annotations

import functools
import glob
import logging
import os
import re
import resource
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evaluator.contract.backends import THUNDERKITTENS_ENV
from evaluator.contract.profiles import MULTICAST_OFF
from evaluator.host import cgroups, neutral_files, seccomp

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # evaluator/
SANDBOX_UID = int(os.environ.get("ARENA_SANDBOX_UID", "65534"))
SANDBOX_GID = int(os.environ.get("ARENA_SANDBOX_GID", "65534"))
# The judge's sandbox runs under a uid of its own, neither root nor the solution's.
JUDGE_UID = int(os.environ.get("ARENA_JUDGE_UID", "65533"))
JUDGE_GID = int(os.environ.get("ARENA_JUDGE_GID", "65533"))
PROBLEMS_ROOT = PACKAGE_ROOT.parent / "problems"
JUDGE_CODE = "/judge"  # inside the judge's sandbox: evaluator/ and problems/
GiB = 1 << 30
MiB = 1 << 20
# Where a rank finds the compiled engine (evaluator/timer/_engine.cpp), read-only.
ENGINE_IN_SANDBOX = "/arena/_arena_timer.so"
# The evaluator's files a rank may see: the worker, the timer's Python side, the wire format. Nothing that judges.
RUNTIME_FILES = (
    "__init__.py",
    "wire.py",
    "timer/__init__.py",
    "timer/protocol.py",
    "timer/spin.py",
    "rank/__init__.py",
    "rank/spawn.py",
    "rank/worker.py",
    "rank/backends/__init__.py",
    "rank/backends/parallelkittens.py",
    "rank/backends/nvshmem.py",
)
# ... and the backends' helpers that ``rank/backends`` re-exports, defined in problems/ so known answers may import them
# too, and the references' own helpers (problems/common.py, which imports only torch and problems/seeds.py): a
# solution that starts as a copy of its reference keeps its imports (the static checks allow them). Nothing else of
# problems/ (no registry, no reference).
PROBLEMS_RUNTIME_FILES = (
    "__init__.py",
    "common.py",
    "seeds.py",
    "backends/__init__.py",
    "backends/parallelkittens.py",
    "backends/nvshmem.py",
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/opt/nvidia")
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/os-release",
)
# Compilers and build tools a solution's set-up may run (load_inline, Triton); by their installed paths.
TOOLCHAIN = (
    "nvcc",
    "ptxas",
    "cicc",
    "fatbinary",
    "nvlink",
    "cudafe++",
    "ninja",
    "cc",
    "c++",
    "gcc",
    "g++",
    "x86_64-linux-gnu-gcc-12",
    "x86_64-linux-gnu-g++-12",
    "cc1",
    "cc1plus",
    "collect2",
    "as",
    "ld",
    "ld.bfd",
    "ld.gold",
    "sh",
    "dash",
    "bash",
    "ldconfig",
    "ldconfig.real",
    "uname",
    "which",
    "lto-wrapper",
    "lto1",
)
# Compilers by the names distributions and images give them: a target prefix (x86_64-linux-gnu-), a version suffix
# (-13), the real program behind a wrapper (gcc-real: one GPU image's /opt/gcc/bin/gcc execs it). A name proves
# nothing by itself (watch.is_toolchain also asks where the program lies); a list of exact names refused honest
# builds on a host whose gcc was gcc-13.
_COMPILER_NAME = re.compile(r"(?:[a-z0-9_]+-)*(?:gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+)(?:-[0-9.]+)?(?:-real)?")
# The assembler and linker a compiler runs, by the file their links end at: Debian's /usr/bin/ld is
# x86_64-linux-gnu-ld.bfd, and /proc/PID/exe names that file (a Triton launcher's link was refused on one GPU image).
# Never the dynamic loader (ld.so, ld-linux-x86-64.so.2): it runs whatever program it is handed.
_BINUTILS_NAME = re.compile(r"(?:[a-z0-9_]+-)*(?:as|ld|ld\.bfd|ld\.gold|ld\.lld|collect2|lto-wrapper)(?:-[0-9.]+)?")


def is_toolchain_name(name: str) -> bool:
    """Whether a program called ``name`` is one of the build tools a solution's set-up may run."""
    return name in TOOLCHAIN or any(p.fullmatch(name) is not None for p in (_COMPILER_NAME, _BINUTILS_NAME))


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up here; the message says what is missing and how to fix it."""


@dataclass(frozen=True)
class JudgeMounts:
    private: Path  # the judge's own folder (inputs before the host moves them, expected outputs, the store)
    io: Path  # the exchange folder, where the solution's outputs arrive
    timer: Path  # the compiled timer's shared object
    reads: tuple[Path, ...] = ()  # an imported problem's suite folder and checkout (problems.registry.read_paths)


@dataclass(frozen=True)
class Mounts:
    runtime: Path  # a folder holding evaluator/ (runtime files only) and, from stage_runtime, problems/ (helpers only)
    timer: Path  # the compiled timer's shared object
    solution: Path  # folder with the solution file
    io: Path  # the exchange folder
    cache: Path  # this solution's build cache


def interpreter_paths(python: str | None = None) -> list[str]:
    """The interpreter and its libraries, bound read-only at their own paths."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(python or sys.executable))}
    # Not the user's own site-packages: inside, HOME is /tmp/home, so the interpreter never looks there, and bound at
    # its own path it showed the worker's home to every solution.
    for p in site.getsitepackages():
        if os.path.isdir(p):
            paths.add(os.path.realpath(p))
    out = sorted(p for p in paths if p and os.path.isdir(p))
    # A path inside another bound one needs no bind of its own.
    return [p for p in out if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in out)]


# The folders of a compiler's prefix its tools use (bin/, its libraries and helpers, headers): the prefix is never
# bound whole, since what else sits there (a service's home with its keys, a deployment) is not the toolchain's.
TOOLCHAIN_FOLDERS = ("bin", "lib", "lib32", "lib64", "libexec", "include")


def toolchain_paths() -> list[str]:
    """CUDA toolkits, when the host has them (load_inline and Triton need them at set-up), and compilers installed
    outside /usr: each one's prefix's ``TOOLCHAIN_FOLDERS``, where the tool lies in the prefix's bin/ and the prefix
    lies strictly below a toolchain root (below)."""
    kits = [p for p in glob.glob("/usr/local/cuda*") if os.path.isdir(p) and not os.path.islink(p)]
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home and os.path.isdir(cuda_home):
        kits.append(os.path.realpath(cuda_home))
    prefixes = []
    for tool in (os.environ.get("CC", "cc"), os.environ.get("CXX", "c++"), "gcc", "g++", "nvcc", "ninja"):
        path = shutil.which(tool)
        if path:
            real = os.path.realpath(path)
            prefix = os.path.dirname(os.path.dirname(real))
            if os.path.basename(os.path.dirname(real)) == "bin" and prefix != "/" and not _inside(prefix, "/usr"):
                prefixes.append(prefix)
    # A kit is bound whole only where it is one (its nvcc in its bin/): CUDA_HOME pointed at any other folder bound it.
    kits = [k for k in kits if os.path.isfile(os.path.join(k, "bin", "nvcc"))]
    allowed = [p for p in kits + prefixes if _toolchain_root_holds(p)]
    kept = [p for p in kits if p in allowed]
    kept += [f for p in prefixes if p in allowed for f in _own_folders(p)]
    for p in sorted(set(kits + prefixes) - set(allowed)):
        logging.getLogger(__name__).warning(
            "the toolchain at %s is not bound into the sandboxes: it is not strictly below %s "
            "(ARENA_TOOLCHAIN_ROOTS), or it holds the evaluator or its cache",
            p,
            ":".join(toolchain_roots()),
        )
    return sorted({p for p in kept if os.path.isdir(p)})


def _own_folders(prefix: str) -> list[str]:
    """The prefix's ``TOOLCHAIN_FOLDERS``, each as it resolves, where it resolves inside the prefix and is not the
    prefix itself: bubblewrap follows links, and a lib64 linked to a service's state folder, or an include linked to
    ".", bound those instead."""
    real = os.path.realpath(prefix)
    out = []
    for name in TOOLCHAIN_FOLDERS:
        folder = os.path.realpath(os.path.join(prefix, name))
        if folder != real and _inside(folder, real) and os.path.isdir(folder):
            out.append(folder)
    return out


def toolchain_roots() -> tuple[str, ...]:
    """Where toolchains outside /usr may be bound from: /opt and /usr/local by default, or the folders
    ARENA_TOOLCHAIN_ROOTS lists (colon-separated)."""
    declared = [r for r in os.environ.get("ARENA_TOOLCHAIN_ROOTS", "").split(":") if r.startswith("/")]
    return tuple(os.path.realpath(r) for r in declared) or ("/opt", "/usr/local")


def _toolchain_root_holds(prefix: str) -> bool:
    """Whether ``prefix`` may be bound from: strictly below a declared root (a tool in /opt/bin made /opt itself the
    prefix), and not holding this evaluator or the host's cache."""
    from evaluator import timer as compiled_timer

    if not any(prefix != r and _inside(prefix, r) for r in toolchain_roots()):
        return False
    private = [str(PACKAGE_ROOT.parent), os.path.realpath(compiled_timer.cache_dir())]
    return not any(_inside(h, prefix) or _inside(prefix, h) for h in private)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _homes() -> tuple[str, ...]:
    """Home folders: /root, /home and the worker's own."""
    found = {"/root", "/home", os.path.realpath(os.path.expanduser("~"))}
    return tuple(sorted(found - {"/"}))


def program_roots() -> tuple[str, ...]:
    """The folders the sandboxes bind read-only from the host's own installation (the system, the interpreter, the
    CUDA toolkits): a program run from below one of them was installed by the host, not written by a solution."""
    env = tuple(os.environ.get(k) for k in ("CUDA_HOME", "CC", "CXX", "PATH"))
    return _program_roots(env, sys.executable)


@functools.lru_cache(maxsize=4)
def _program_roots(env: tuple[str | None, ...], python: str) -> tuple[str, ...]:
    # cached: the host walks the sandbox's processes after every call, and these only change with the environment
    system = [d for d in SYSTEM_DIRS if os.path.exists(d)]
    return tuple(system + interpreter_paths(python) + toolchain_paths())


def thunderkittens_path() -> str | None:
    """The host's ThunderKittens checkout (``ARENA_THUNDERKITTENS``, docs/backends/parallelkittens.md), bound
    read-only at the same path; None when unset or not a checkout."""
    path = os.environ.get(THUNDERKITTENS_ENV)
    if path and os.path.isfile(os.path.join(path, "include", "kittens.cuh")):
        real = os.path.realpath(path)
        if any(_inside(real, h) for h in _homes()):
            # bound whole, a checkout in a home showed the home, and its .git (a token in a remote's URL, say)
            logging.getLogger(__name__).warning("ThunderKittens at %s is in a home folder: not bound", real)
            return None
        return os.path.abspath(path)
    return None


def gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*"))


def stage_runtime(into: Path) -> Path:
    """Copies the runtime files into ``into``/evaluator and ``into``/problems (once per folder); returns ``into``."""
    for files, source, target in (
        (RUNTIME_FILES, PACKAGE_ROOT, into / "evaluator"),
        (PROBLEMS_RUNTIME_FILES, PROBLEMS_ROOT, into / "problems"),
    ):
        for rel in files:
            dst = target / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, dst)
    return into


def _require_bwrap() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (`bwrap`) is not installed on this worker; install it (Debian: "
            "`apt-get install bubblewrap`, which the README's set-up command does)"
        )
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the worker is not root, so it cannot run the solution under a uid of its own; run "
            "the worker as root (the ranks then run as ARENA_SANDBOX_UID, default 65534)"
        )
    return bwrap


def _box(
    binds: list[tuple[str, str, str]], argv: list[str], env: dict[str, str], device: str, tmp_bytes: int, hostname: str
) -> list[str]:
    """bubblewrap's command line for one sandbox: the system, the interpreter, the toolchain read-only, then
    ``binds`` (option, host path, path inside), the GPU's device nodes, a size-capped /tmp and /dev/shm (pages
    there belong to no process: without a size, a sandbox could fill half the host's memory), nothing else."""
    bwrap = _require_bwrap()
    # No user namespace: with one, the sandbox's uid would map back to the worker's own (root) on the host. The
    # sandbox starts as root with only the right to change uid, and its first process drops to its uid
    # (evaluator.rank.spawn) before anything else runs, so every process in it is that uid on the host too.
    # bubblewrap's --disable-userns needs that user namespace too; the system-call filter refuses new namespaces of
    # every kind instead (evaluator/host/seccomp.py), loaded by bubblewrap just before the sandbox's first program.
    args = [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        hostname,
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--seccomp",
        seccomp.FD_PLACEHOLDER,
    ]
    kittens = thunderkittens_path()
    own = interpreter_paths() + toolchain_paths() + ([kittens] if kittens else [])
    system = [d for d in SYSTEM_DIRS if os.path.exists(d)]
    # The host's accounts, hostname, kernel command line and boot are not the sandbox's: files of ours stand in their
    # place, and an empty one over every install record naming where a package came from (a checkout, say).
    ours = neutral_files.files((SANDBOX_UID, SANDBOX_GID), (JUDGE_UID, JUDGE_GID))
    records = neutral_files.install_records(neutral_files.site_dirs())
    etc = [f for f in ETC_FILES if os.path.exists(f)] + [inside for _, inside in ours if inside.startswith("/etc/")]
    targets = system + etc + own + [inside for _, _, inside in binds]
    # bubblewrap makes the folders above a bind mode 0700 for root; the sandbox's uid must pass through them, so
    # they are made first, 0755, before any bind creates them.
    parents = sorted(
        {
            str(a)
            for t in targets
            for a in Path(t).parents
            if str(a) != "/" and not any(str(a) == b or str(a).startswith(b + "/") for b in targets)
        },
        key=lambda x: x.count("/"),
    )
    # The private /tmp, /proc and /dev first: a bind below /tmp (an interpreter in a checkout under /tmp, say) must
    # sit on top of the tmpfs, not under it.
    args += [
        "--perms",
        "1777",
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/dev/shm",
    ]
    for d in parents:
        if d not in ("/tmp", "/dev", "/proc"):
            args += ["--perms", "0755", "--dir", d]
    for d in system:
        args += ["--ro-bind", d, d]
    for f in ETC_FILES:
        args += ["--ro-bind-try", f, f]
    for p in own:
        args += ["--ro-bind", p, p]
    if kittens and os.path.isdir(os.path.join(kittens, ".git")):
        args += ["--tmpfs", os.path.join(kittens, ".git")]  # its history and remotes are not the build's
    for option, host, inside in binds:
        args += [option, host, inside]
    for host, inside in ours:
        args += ["--ro-bind", host, inside]
    empty = neutral_files.empty()
    for record in records:
        args += ["--ro-bind", empty, record]
    if device == "cuda":
        for node in gpu_devices():
            args += ["--dev-bind", node, node]
    args += ["--chdir", "/tmp", "--clearenv"]
    for k, v in sorted(env.items()):
        args += ["--setenv", k, v]
    try:
        return seccomp.wrap(seccomp.host_python(), bwrap, args, argv)
    except seccomp.UnsupportedArch as exc:
        raise SandboxUnavailable(str(exc)) from exc


def command(mounts: Mounts, argv: list[str], env: dict[str, str], device: str, tmp_bytes: int) -> list[str]:
    """The solution's sandbox: the evaluator's runtime files (and the backends' helpers of problems/, where
    ``stage_runtime`` put them), the timer, the solution, the exchange folder and the solution's build cache."""
    helpers = mounts.runtime / "problems"
    return _box(
        [
            ("--ro-bind", str(mounts.runtime / "evaluator"), "/arena/evaluator"),
            *([("--ro-bind", str(helpers), "/arena/problems")] if helpers.is_dir() else []),
            ("--ro-bind", str(mounts.timer), ENGINE_IN_SANDBOX),
            ("--ro-bind", str(mounts.solution), "/solution"),
            ("--bind", str(mounts.io), "/io"),
            ("--bind", str(mounts.cache), "/cache"),
        ],
        argv,
        env,
        device,
        tmp_bytes,
        "arena-sandbox",
    )


def judge_command(mounts: JudgeMounts, argv: list[str], env: dict[str, str], device: str, tmp_bytes: int) -> list[str]:
    """The judge's sandbox, apart from the solution's: the evaluator and the problems read-only at /judge; the
    judge's private folder, the exchange folder (read-only), the timer and, for an imported problem, its suite
    folder and checkout (read-only: their references are third-party code), at their host paths, which the
    judge's configuration and the suite's files name."""
    binds = [
        ("--ro-bind", str(PACKAGE_ROOT), f"{JUDGE_CODE}/evaluator"),
        ("--ro-bind", str(PROBLEMS_ROOT), f"{JUDGE_CODE}/problems"),
        ("--bind", str(mounts.private), str(mounts.private)),
        ("--ro-bind", str(mounts.io), str(mounts.io)),
        ("--ro-bind", str(mounts.timer), str(mounts.timer)),
    ]
    binds += [("--ro-bind", str(p), str(p)) for p in mounts.reads if p.exists()]
    return _box(binds, argv, env, device, tmp_bytes, "arena-judge")


# What both sandboxes take from the host's environment, and what both are given.
_PASSED_ON = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "TORCH_CUDA_ARCH_LIST",
    "NCCL_DEBUG",
    "VIRTUAL_ENV",
)


def _sandbox_environment(base: dict[str, str], also: tuple[str, ...], uid: int, gid: int) -> dict[str, str]:
    env = _bound_only({k: v for k, v in base.items() if k in _PASSED_ON + also})
    env.update(MULTICAST_OFF)
    env.update(
        {
            "HOME": "/tmp/home",
            "TMPDIR": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",
            "NCCL_SOCKET_IFNAME": "lo",
            "GLOO_SOCKET_IFNAME": "lo",
            "MASTER_ADDR": "127.0.0.1",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            # NCCL names its threads only when asked: the host tells a communicator's threads (of the
            # evaluation's, or of a private group the solution made) from a solution's own by their names.
            "NCCL_SET_THREAD_NAME": "1",
            # The loader binds every library's table of addresses at load, not on each entry's first call: the engine
            # holds every entry it watches to what it held when the rank sealed (check_bound_tables), so no entry is
            # left at a lazy stub that a solution could point at any function loaded by then. Both sides, alike.
            "LD_BIND_NOW": "1",
            "ARENA_SANDBOX_UID": str(uid),
            "ARENA_SANDBOX_GID": str(gid),
        }
    )
    return env


# Variables that name host folders: a list of them, or one (a compiler may be named without a folder, and keeps it).
_FOLDER_LISTS = ("PATH", "LD_LIBRARY_PATH")
_FOLDERS = ("CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CC", "CXX")


def _bound_only(env: dict[str, str]) -> dict[str, str]:
    """``env`` less every folder the sandbox does not bind (a user's own tools or libraries, a version manager's
    shims, a toolkit in a home): those find nothing inside, and they would name the host's layout to the solution."""
    roots = program_roots()

    def bound(d: str) -> bool:
        return any(_inside(p, r) for p in (d, os.path.realpath(d)) for r in roots)

    out = dict(env)
    for key in _FOLDER_LISTS:
        kept = [d for d in dict.fromkeys(out.get(key, "").split(":")) if d.startswith("/") and bound(d)]
        if kept:
            out[key] = ":".join(kept)
        else:
            out.pop(key, None)
    for key in _FOLDERS:
        if key in out and "/" in out[key] and not bound(out[key]):
            del out[key]
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return out


def environment(base: dict[str, str], device: str) -> dict[str, str]:
    """The variables a rank sees: the host's allow-list, the multicast switches, and the sandbox's own paths."""
    env = _sandbox_environment(base, ("CC", "CXX", "NVSHMEM_DEBUG"), SANDBOX_UID, SANDBOX_GID)
    kittens = thunderkittens_path()
    if kittens:
        env[THUNDERKITTENS_ENV] = kittens
    env.update(
        {
            "PYTHONPATH": "/arena",
            "ARENA_IO": "/io",
            "TORCH_EXTENSIONS_DIR": "/cache/torch_extensions",
            "TRITON_CACHE_DIR": "/cache/triton",
            "TORCHINDUCTOR_CACHE_DIR": "/cache/inductor",
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
        }
    )
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    return env


def judge_environment(base: dict[str, str], device: str, suites: Path | None) -> dict[str, str]:
    """The variables a judge rank sees: the host's allow-list, the multicast switches, the judge's own paths."""
    env = _sandbox_environment(base, (), JUDGE_UID, JUDGE_GID)
    # Inside, the suites folder is where the host has it (only an imported problem's own suite is bound).
    env.update({"PYTHONPATH": JUDGE_CODE, "ARENA_SUITES_DIR": str(suites) if suites else "/nonexistent-suites"})
    return env


# Processes and threads one sandbox may hold at once (its pids cgroup): a rank's CUDA, NCCL and torch threads and a
# load_inline build's compilers fit many times over; a fork bomb stops there. ARENA_SANDBOX_PIDS overrides both.
PIDS_MAX = {"cpu": 512, "cuda": 4096}
# Without a pids cgroup (ARENA_PIDS_CGROUP=auto on a host that has none) the one fallback is RLIMIT_NPROC, which the
# kernel counts per uid over the whole host: every sandbox of that uid shares it.
NPROC_FALLBACK_FACTOR = 4
FILE_BYTES = {"cpu": 2 * GiB, "cuda": 16 * GiB}
OPEN_FILES = 4096


def pids_max(device: str) -> int:
    configured = os.environ.get("ARENA_SANDBOX_PIDS", "").strip()
    return int(configured) if configured.isdigit() and int(configured) > 0 else PIDS_MAX[device]


def pids_cgroup_missing() -> str | None:
    """What stops this worker from giving each sandbox a process cap of its own, when ARENA_PIDS_CGROUP asks for one
    (``required``); None otherwise."""
    if cgroups.mode() != "required" or cgroups.pids_root() is not None:
        return None
    return (
        "no writable pids cgroup on this worker (cgroup v2 with the pids controller, or the v1 pids hierarchy, "
        "under /sys/fs/cgroup) and ARENA_PIDS_CGROUP=required; see docs/operations.md"
    )


# Memory one sandbox may hold (every process's pages and the tmpfs pages it writes, /tmp and /dev/shm included): a
# CPU evaluation's ranks need a few hundred MiB each; a GPU rank's CUDA context, NCCL's buffers and pinned host memory
# a few GiB, and a load_inline build's compilers about 1 GiB per job. ARENA_SANDBOX_MEMORY (bytes) overrides both.
MEMORY_MAX = {"cpu": 8 * GiB, "cuda": 96 * GiB}


def memory_max(device: str) -> int:
    configured = os.environ.get("ARENA_SANDBOX_MEMORY", "").strip()
    return int(configured) if configured.isdigit() and int(configured) > 0 else MEMORY_MAX[device]


# Socket buffers one sandbox may hold (cgroup v1 only: v2's memory.max counts them in the sandbox's memory). On v1 they
# are charged to no cgroup unless capped apart, and the kernel's TCP pool is one for the whole host, every network
# namespace included: a red team filled it to its hard limit from inside a sandbox (about 150 unread loopback
# connections a rank), and every TCP socket of the host, the worker's own included, then ran under it. gloo's
# exchanges between a few ranks hold a few MiB.
TCP_MEMORY_MAX = 256 * MiB


def limits(device: str) -> Callable[[], None]:
    """Resource limits for everything in the sandbox, set in the launcher's process before it execs bubblewrap (so
    they hold from the sandbox's first instruction): its own cgroups (processes and threads, memory), a core-dump
    size of 0, a file size and open files cap."""
    file_bytes = FILE_BYTES[device]
    cap = pids_max(device)
    joins: list[tuple[Path, dict[str, str]]] = []
    root = cgroups.pids_root() if cgroups.mode() != "off" else None
    if root is not None:
        cgroups.sweep(root)
        joins.append((root, {"pids.max": str(cap)}))
    elif cgroups.mode() == "required":
        raise SandboxUnavailable(pids_cgroup_missing() or "no pids cgroup")
    memory = cgroups.memory_root() if cgroups.mode() != "off" else None
    if memory is not None:
        settings = cgroups.memory_settings(memory, memory_max(device), TCP_MEMORY_MAX)
        if joins and joins[0][0] == memory:  # cgroup v2: one cgroup holds both caps
            joins[0][1].update(settings)
        else:
            cgroups.sweep(memory)
            joins.append((memory, settings))

    def apply() -> None:
        for where, settings in joins:
            cgroups.join_new(where, settings)
        if root is None and cgroups.mode() == "auto":
            n = cap * NPROC_FALLBACK_FACTOR
            resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))

    return apply


def limits_reached(pid: int) -> list[str]:
    """What the sandbox launched as ``pid`` was refused at its limits, in words (for a verdict's message): empty when
    it reached none. Read after the sandbox ended, before the next sweep (a minute at least)."""
    said = []
    for path in cgroups.of(pid):
        refused = cgroups.refusals(path)
        if refused:
            said.append(
                f"the sandbox reached its cap of {cgroups.cap(path)} processes and threads (a pids cgroup "
                f"of its own): {refused} fork(s) or thread start(s) refused"
            )
    memory = cgroups.memory_root()
    for path in cgroups.of(pid, memory) if memory is not None else []:
        killed = cgroups.oom_kills(path)
        if killed:
            cap = cgroups.memory_cap(path)
            said.append(
                f"the sandbox reached its memory cap of {(cap or 0) / GiB:.1f} GiB (a memory cgroup of its "
                f"own): {killed} process(es) killed by the kernel"
            )
    return said


# Starts as the sandbox's uid, opens a socket, and finds the system-call filter in place (a new user namespace refused).
_PROBE = (
    "import ctypes, os, socket; os.setgroups([]); os.setgid(int(os.environ['ARENA_SANDBOX_GID'])); "
    "os.setuid(int(os.environ['ARENA_SANDBOX_UID'])); socket.socket().close(); "
    "libc = ctypes.CDLL(None, use_errno=True); "
    "print(os.getuid() if libc.unshare(0x10000000) == -1 and ctypes.get_errno() == 1 else 'unfiltered')"
)


@functools.lru_cache(maxsize=4)
def _probe(python: str, device: str) -> str | None:
    env = environment(dict(os.environ), device)
    with __import__("tempfile").TemporaryDirectory() as tmp:
        t = Path(tmp)
        for name in ("rt/evaluator", "sol", "io", "cache"):
            (t / name).mkdir(parents=True)
        (t / "timer.so").write_bytes(b"")
        mounts = Mounts(t / "rt", t / "timer.so", t / "sol", t / "io", t / "cache")
        try:
            argv = command(mounts, [python, "-c", _PROBE], env, device, 64 << 20)
        except SandboxUnavailable as exc:
            return str(exc)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, preexec_fn=limits(device))
    if done.returncode != 0:
        return (
            f"bubblewrap could not start the sandbox on this worker (exit {done.returncode}: "
            f"{done.stderr.strip()[:400]}); it needs unprivileged or root namespaces (see docs/operations.md)"
        )
    if done.stdout.strip() == "unfiltered":
        return "the sandbox's system-call filter is not in effect (a new user namespace was allowed)"
    if done.stdout.strip() != str(SANDBOX_UID):
        return f"the sandbox did not run as uid {SANDBOX_UID} (got {done.stdout.strip()!r})"
    return None


def probe(device: str, python: str | None = None) -> str | None:
    """None when a sandbox can be started here; otherwise what is missing (cached per worker process)."""
    return pids_cgroup_missing() or _probe(python or sys.executable, device)
