"""Issue 13, class (g), the strong form, against the compiled engine. The engine keeps the timer's SipHash key, its
sample sequence and the timer's descriptor in a struct of the shared object mapped into the rank's own process: this
cheat finds the struct in the object's writable memory (by the descriptor number, which the rank's command line
gives, sitting beside the "opened" flag), points the engine's descriptor at /dev/null, and writes its own
correctly keyed samples — four fifths of its real time, hiding a fifth, or whatever share ARENA_TEST_CLAIM says — to
the host's pipe (for every timed call, or for the first ARENA_TEST_FORGE_UNTIL only). Computes honestly, and
holds each call for ARENA_TEST_HOLD_S seconds first (the test runs it twice: calls long enough that the fifth they
hide is beyond the host clock's allowance, and calls so short that it is not: see the cases)."""

import importlib
import os
import struct
import sys
import time

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")  # past the static check, as an attacker would
_read = getattr(_ct, "string" + "_at")
_HOLD_S = float("ARENA_TEST_HOLD_S")
_CLAIM = float("ARENA_TEST_CLAIM")  # the share of its real time each forged sample claims
_TRIALS = int(os.environ.get("ARENA_TRIALS", "2"))
_UNTIL = "ARENA_TEST_FORGE_UNTIL"  # forge the first this many timed calls' samples only (default: every one)
_UNTIL = int(_UNTIL) if _UNTIL.isdigit() else 1 << 30


def _timer_fd() -> int:
    return int(sys.argv[4])  # the rank's command line: RANK, then its command, report, timer and feed descriptors


def _find_state(fd: int) -> int:
    """Address of the engine's state: {bool opened; int timer_fd; u64 k0, k1; u32 seq; ...}."""
    regions, after_object = [], False
    for line in open("/proc/self/maps"):
        parts = line.split()
        start, end = (int(v, 16) for v in parts[0].split("-"))
        named = len(parts) > 5 and parts[5].endswith("_arena_timer.so")
        if named and parts[1].startswith("rw"):
            regions.append((start, end))
            after_object = True
        elif after_object and len(parts) <= 5 and parts[1].startswith("rw"):
            regions.append((start, end))  # the object's .bss beyond its file
            after_object = False
        else:
            after_object = named
    pattern = b"\x01\x00\x00\x00" + struct.pack("<i", fd)
    for start, end in regions:
        data = _read(start, end - start)
        at = data.find(pattern)
        while at >= 0:
            if at % 8 == 0:
                return start + at
            at = data.find(pattern, at + 1)
    raise LookupError("no engine state found")


try:
    _state = _find_state(_timer_fd())
    _fd_cell = getattr(_ct.c_int, "from_" + "address")(_state + 4)
    _key = (getattr(_ct.c_uint64, "from_" + "address")(_state + 8).value, getattr(_ct.c_uint64, "from_" + "address")(_state + 16).value)
    _sip = getattr(importlib.import_module("evalu" + "ator.timer"), "siphash24")
    print("ARENA_TIMER_KEY_FOUND", flush=True)
except Exception as exc:  # not this engine: nothing to forge
    print("ARENA_TIMER_KEY_NOT_FOUND", exc, flush=True)
    _key = None
_calls = [0]
_pipe: list[int] = []


def solution(x: torch.Tensor) -> torch.Tensor:
    start = time.perf_counter()
    time.sleep(_HOLD_S)
    out = x.clone()
    dist.all_reduce(out)
    took = (time.perf_counter() - start) * 1e6
    _calls[0] += 1
    if _key is not None and _calls[0] > 1 + _TRIALS:  # the warm-up call and the trials are not timed
        if not _pipe:
            _pipe.append(_fd_cell.value)
            _fd_cell.value = os.open("/dev/null", os.O_WRONLY)  # the engine's own samples go nowhere
        seq = _calls[0] - 2 - _TRIALS
        if seq >= _UNTIL:
            _fd_cell.value = _pipe[0]  # the engine's own samples again, their sequence unbroken
            return out
        body = struct.pack("<4sIdd", b"ARNS", seq, took * _CLAIM, took * _CLAIM)
        os.write(_pipe[0], body + struct.pack("<Q8x", _sip(*_key, body)))
    return out
