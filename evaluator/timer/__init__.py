"""The compiled engine: its C++ source (``_engine.cpp``: the per-call path of both sides, the timer among it), its
build (once per host, interpreter and torch, cached), the host's commands to it, and the host's reader that accepts
only samples keyed by the engine itself.

Both the judge (baseline) and the sandboxed ranks (solution) run every call through this one module, under the same
protocol, so identical code reads the same. Building needs torch and a C++ compiler; reading samples and writing
commands need the standard library only, so the host needs no torch for them."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import math
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("_engine.cpp")
MODULE = "_arena_timer"
HELLO = struct.Struct("<4s4x16s")  # magic, key
RECORD = struct.Struct("<4sIddQ8x")  # magic, sequence, time µs, launch µs, SipHash-2-4 of the first 24 bytes
# Magic, op, i, flags, a number, and the key the call's feed frame is masked under (_engine.cpp mask_frame): what the
# host tells a rank after its load.
COMMAND = struct.Struct("<4sIIIdQQ")
CALL, TIME, SPIN, EXIT = 1, 2, 3, 4
TRIAL_FLAG, RECORD_FLAG = 1, 1  # CALL: a correctness trial (else the warm-up call); TIME: a recorded iteration
_MASK = (1 << 64) - 1
_BUILD_LIMIT_S = 600
MAX_SAMPLE_US = 3600e6  # longer than any phase may last
# A rank's exit status when its engine found the report or timer descriptor re-pointed (_engine.cpp same_channel).
CHANNEL_REPLACED_EXIT = 87
# A rank's exit status when the solution called the engine from inside its call (_engine.cpp not_while_serving).
ENGINE_REENTERED_EXIT = 88
# A rank's exit status when an object the engine calls through was altered (_engine.cpp backend(),
# check_bound_tables()).
ENGINE_ALTERED_EXIT = 89


class TimerBuildError(RuntimeError):
    pass


def command(op: int, i: int = 0, flags: int = 0, arg: float = 0.0, key: tuple[int, int] = (0, 0)) -> bytes:
    return COMMAND.pack(b"ARNC", op, i, flags, arg, *key)


def mask_key() -> tuple[int, int]:
    """A fresh key to mask one call's feed frame under (_engine.cpp mask_frame): drawn by the judge for each call and
    rank, sent with the host's command to that rank's engine alone."""
    return (int.from_bytes(os.urandom(8), "little"), int.from_bytes(os.urandom(8), "little"))


def cache_dir() -> Path:
    """The host's one cache root: the engine's builds under ``timer/``, the solutions' build caches under
    ``solutions/``. Both are bound into sandboxes, whose mount table (``/proc/self/mountinfo``) shows each bind's
    source, so the default is a fixed folder that says nothing of the host: under the worker's home (the engine's
    earlier default) it named the user and the home's layout to every solution."""
    root = os.environ.get("ARENA_CACHE_DIR")
    return Path(root) if root else Path("/var/tmp/arena-cache")


def _torch_version(python: str) -> str:
    if python == sys.executable:
        import importlib.metadata

        try:
            return importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError as exc:
            raise TimerBuildError(f"the compiled engine needs torch in {python}") from exc
    done = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise TimerBuildError(f"the compiled engine needs torch in {python}: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


_BUILD = """
import sys
from torch.utils.cpp_extension import load
load(name=sys.argv[1], sources=[sys.argv[2]], build_directory=sys.argv[3], extra_cflags=["-O2"],
     extra_ldflags=["-ldl", "-Wl,-z,relro,-z,now"], verbose=False)
"""


def build_folder(python: str | None = None) -> Path:
    """Where the engine for this interpreter, its headers and its torch is built and kept."""
    python = python or sys.executable
    include = sysconfig.get_paths()["include"]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    version = _torch_version(python)
    digest = hashlib.sha256(
        SOURCE.read_bytes()
        + _BUILD.encode()
        + include.encode()
        + suffix.encode()
        + version.encode()
        + _interpreter(python).encode()
    ).hexdigest()[:16]
    return cache_dir() / "timer" / digest


def _interpreter(python: str) -> str:
    """The interpreter and its environment, whatever name started it: a virtual environment's `python` and `python3`
    are one program (the `rq` script starts workers through `python3`), and keyed by name each built its own engine,
    a minute's build inside the first evaluation of every worker."""
    path = Path(python).absolute()
    return f"{path.parent.resolve()}:{path.resolve()}"


def build(python: str | None = None) -> Path:
    """The engine's shared object for this interpreter and torch, compiled on first use (about 30 s) and cached; a
    second process building at the same time waits for the first."""
    python = python or sys.executable
    include = sysconfig.get_paths()["include"]
    folder = build_folder(python)
    target = folder / f"{MODULE}.so"
    if target.exists():
        return target
    if not Path(include, "Python.h").exists():
        raise TimerBuildError(
            f"the compiled engine needs Python's headers ({include}/Python.h is missing); install "
            f"the interpreter's development package (e.g. python3-dev)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        # A builder killed mid-way (a worker SIGKILLed on a fresh host) leaves torch's own lock file in its build
        # folder, and torch waits for that file to go forever; holding our lock, nobody else is building here.
        work = folder / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            done = subprocess.run(
                [python, "-c", _BUILD, MODULE, str(SOURCE), str(work)],
                capture_output=True,
                text=True,
                timeout=_BUILD_LIMIT_S,
            )
        except FileNotFoundError as exc:
            raise TimerBuildError(f"the compiled engine could not run {python}") from exc
        built = work / f"{MODULE}.so"
        if done.returncode != 0 or not built.exists():
            tail = (done.stderr or done.stdout).strip()[-800:]
            hint = (
                " (install a C++ compiler and ninja: apt-get install g++ ninja-build)"
                if "ninja" in tail.lower() or "g++" in tail.lower() or "c++" in tail.lower()
                else ""
            )
            raise TimerBuildError(f"the compiled engine did not build{hint}: {tail}")
        built.chmod(0o755)
        os.replace(built, target)
    return target


def load(path: str | Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_loader(MODULE, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of ``data`` (a multiple of 8 bytes, as the timer's records are)."""
    v0, v1 = 0x736F6D6570736575 ^ k0, 0x646F72616E646F6D ^ k1
    v2, v3 = 0x6C7967656E657261 ^ k0, 0x7465646279746573 ^ k1

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)  # noqa: E702
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2  # noqa: E702
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0  # noqa: E702
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)  # noqa: E702

    for i in range(0, len(data), 8):
        w = int.from_bytes(data[i : i + 8], "little")
        v3 ^= w
        rounds(2)
        v0 ^= w
    b = (len(data) << 56) & _MASK
    v3 ^= b
    rounds(2)
    v0 ^= b
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


class SampleReader:
    """Reads one rank's timer descriptor on the host: the key first (sent before the solution was loaded), then
    samples that must carry the key's MAC and consecutive sequence numbers. Anything else is a forgery."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.key: tuple[int, int] | None = None
        self.samples: list[tuple[float, float]] = []
        self.error: str | None = None

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while self.error is None:
            if self.key is None:
                if len(self.buffer) < HELLO.size:
                    return
                magic, key = HELLO.unpack_from(self.buffer)
                self.buffer = self.buffer[HELLO.size :]
                if magic != b"ARNK":
                    self.error = "the timer's descriptor did not start with its key"
                    return
                self.key = (int.from_bytes(key[:8], "little"), int.from_bytes(key[8:], "little"))
                continue
            if len(self.buffer) < RECORD.size:
                return
            raw = self.buffer[: RECORD.size]
            self.buffer = self.buffer[RECORD.size :]
            magic, seq, us, launch, mac = RECORD.unpack(raw)
            if magic != b"ARNS" or mac != siphash24(*self.key, raw[:24]) or seq != len(self.samples):
                self.error = "a timing sample did not come from the evaluator's timer (bad key or sequence)"
                return
            if not (math.isfinite(us) and math.isfinite(launch) and 0.0 < us < MAX_SAMPLE_US and launch >= 0.0):
                # The engine measures a call that ran: a time of zero, below it, or past any phase's limit is
                # written by something else (a forgery with the key read from memory), and would reach the figures.
                self.error = f"a timing sample was impossible ({us!r} µs)"
                return
            self.samples.append((us, launch))

    def drain(self) -> None:
        """Reads everything written so far from a non-blocking descriptor, and returns (at end of file too)."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            if not data:
                return
            self.feed(data)

    def read_available(self) -> bool:
        """Reads what is there; False at end of file."""
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        self.feed(data)
        return True
