"""The compiled timer: its C source (``_timer.c``), its build (once per host and interpreter, cached), and the
host's reader that accepts only samples keyed by the timer itself.

Both the judge (baseline) and the sandboxed ranks (solution) time with this one module, under the same protocol, so
identical code reads the same. Standard library only, so the host can build and read without torch."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("_timer.c")
HELLO = struct.Struct("<4s4x16s")  # magic, key
RECORD = struct.Struct("<4sIddQ8x")  # magic, sequence, time µs, launch µs, SipHash-2-4 of the first 24 bytes
_MASK = (1 << 64) - 1


class TimerBuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("ARENA_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "arena"


def build(python: str | None = None) -> Path:
    """The timer's shared object for this interpreter, compiled with the host's C compiler on first use."""
    python = python or sys.executable
    include = sysconfig.get_paths()["include"]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    digest = hashlib.sha256(SOURCE.read_bytes() + include.encode() + suffix.encode()).hexdigest()[:16]
    target = cache_dir() / "timer" / f"_arena_timer-{digest}{suffix}"
    if target.exists():
        return target
    if not Path(include, "Python.h").exists():
        raise TimerBuildError(f"the compiled timer needs Python's headers ({include}/Python.h is missing); install the "
                              f"interpreter's development package (e.g. python3-dev)")
    target.parent.mkdir(parents=True, exist_ok=True)
    compiler = os.environ.get("CC", "cc")
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    cmd = [compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(partial), "-ldl"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError as exc:
        raise TimerBuildError(f"the compiled timer needs a C compiler ({compiler!r} not found); install gcc") from exc
    if done.returncode != 0:
        raise TimerBuildError(f"the compiled timer did not build: {done.stderr.strip()[:500]}")
    partial.chmod(0o755)
    os.replace(partial, target)
    return target


def load(path: str | Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader("_arena_timer", str(path))
    spec = importlib.util.spec_from_loader("_arena_timer", loader)
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
            v0 = (v0 + v1) & _MASK; v1 = _rotl(v1, 13) ^ v0; v0 = _rotl(v0, 32)  # noqa: E702
            v2 = (v2 + v3) & _MASK; v3 = _rotl(v3, 16) ^ v2  # noqa: E702
            v0 = (v0 + v3) & _MASK; v3 = _rotl(v3, 21) ^ v0  # noqa: E702
            v2 = (v2 + v1) & _MASK; v1 = _rotl(v1, 17) ^ v2; v2 = _rotl(v2, 32)  # noqa: E702

    for i in range(0, len(data), 8):
        w = int.from_bytes(data[i:i + 8], "little")
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
                self.buffer = self.buffer[HELLO.size:]
                if magic != b"ARNK":
                    self.error = "the timer's descriptor did not start with its key"
                    return
                self.key = (int.from_bytes(key[:8], "little"), int.from_bytes(key[8:], "little"))
                continue
            if len(self.buffer) < RECORD.size:
                return
            raw = self.buffer[:RECORD.size]
            self.buffer = self.buffer[RECORD.size:]
            magic, seq, us, launch, mac = RECORD.unpack(raw)
            if magic != b"ARNS" or mac != siphash24(*self.key, raw[:24]) or seq != len(self.samples):
                self.error = "a timing sample did not come from the evaluator's timer (bad key or sequence)"
                return
            self.samples.append((us, launch))

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
