"""The key read from memory (as in timer_key_from_memory.py), against windows of several calls: the engine writes one
sample per timed window, so this cheat forges one per window too. It watches the engine's own sample count (beside
the key in the engine's state) to learn where windows begin and how many calls each holds, lets the engine's samples
through while the warm-up lasts, then sends them to /dev/null and writes, at the last call of each window, a keyed
sample claiming ARENA_TEST_CLAIM of the device time its window's calls took (timed with its own events on GPUs, its
own clock on CPUs): a fifth of the work hidden outside the samples at the default 0.8. Where the engine has sealed
its state (mseal), it says ARENA_ENGINE_SEALED and forges nothing. Computes honestly."""

import importlib
import os
import struct
import sys
import time

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")  # past the static check, as an attacker would
_read = getattr(_ct, "string" + "_at")
_at = getattr(_ct.c_uint32, "from_" + "address")
_CLAIM = float("ARENA_TEST_CLAIM")
_WARMUP = int("ARENA_TEST_WARMUP")  # the profile's warm-up windows: 10 on GPU hosts, 3 on CPU hosts


def _find_state(fd: int) -> int:
    """Address of the engine's state: {bool opened; int timer_fd; u64 k0, k1; u32 seq; ...}, writable
    or not (the engine makes it read-only once opened)."""
    regions, after_object = [], False
    for line in open("/proc/self/maps"):
        parts = line.split()
        start, end = (int(v, 16) for v in parts[0].split("-"))
        named = len(parts) > 5 and parts[5].endswith("_arena_timer.so")
        # Past its code: the file's read-only part before the code holds the symbol tables, where the same bytes
        # can occur.
        if named and "x" in parts[1]:
            after_object = True
        elif after_object and (named or len(parts) <= 5) and parts[1].startswith("r"):
            regions.append((start, end))
        else:
            after_object = False
    for start, end in regions:
        data = _read(start, end - start)
        pattern = b"\x01\x00\x00\x00" + struct.pack("<i", fd)
        at = data.find(pattern)
        while at >= 0:
            if at % 8 == 0:
                return start + at
            at = data.find(pattern, at + 1)
    raise LookupError("no engine state found")


def _writable(address: int) -> bool:
    """Makes the page at ``address`` writable; False where the kernel refuses (the engine sealed it)."""
    libc = _ct.CDLL(None, use_errno=True)
    protect = getattr(libc, "mpro" + "tect")
    protect.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int]
    if protect(address & ~0xFFF, 0x1000, 3) == 0:
        return True
    print("ARENA_ENGINE_SEALED", _ct.get_errno(), flush=True)
    return False


try:
    _state = _find_state(int(sys.argv[4]))
    _fd_cell = getattr(_ct.c_int, "from_" + "address")(_state + 4)
    _key = tuple(getattr(_ct.c_uint64, "from_" + "address")(_state + off).value for off in (8, 16))
    _sip = getattr(importlib.import_module("evalu" + "ator.timer"), "siphash24")
    print("ARENA_TIMER_KEY_FOUND", flush=True)
    if not _writable(_state + 4):
        _key = None  # the descriptor cannot be re-pointed: nothing to forge
except Exception as exc:
    print("ARENA_TIMER_KEY_NOT_FOUND", exc, flush=True)
    _key = None

_w = {"seq": -1, "calls": 0, "size": 1, "pipe": None, "t0": 0.0, "ev0": None}


def _window_opens() -> None:
    seq = _at(_state + 24).value
    if seq != _w["seq"]:
        if _w["seq"] >= 0 and _w["calls"]:
            _w["size"] = _w["calls"]  # the calls the window that just ended held: the next holds as many
        _w["seq"], _w["calls"] = seq, 0
    _w["calls"] += 1
    if _w["calls"] == 1:
        if torch.cuda.is_available():
            _w["ev0"] = torch.cuda.Event(enable_timing=True)
            _w["ev0"].record()
        _w["t0"] = time.perf_counter()


def _window_closes(seq: int) -> None:
    if torch.cuda.is_available():
        ev1 = torch.cuda.Event(enable_timing=True)
        ev1.record()
        ev1.synchronize()
        took = _w["ev0"].elapsed_time(ev1) * 1000.0
    else:
        took = (time.perf_counter() - _w["t0"]) * 1e6
    if _w["pipe"] is None:
        _w["pipe"] = _fd_cell.value
        _fd_cell.value = os.open("/dev/null", os.O_WRONLY)  # the engine's own samples go nowhere from here on
    body = struct.pack("<4sIdd", b"ARNS", seq, took * _CLAIM, took * _CLAIM)
    os.write(_w["pipe"], body + struct.pack("<Q8x", _sip(*_key, body)))


def solution(x: torch.Tensor) -> torch.Tensor:
    if _key is not None:
        _window_opens()
    out = x.clone()
    dist.all_reduce(out)
    # Past the warm-up, at what the last window's size says is this window's last call.
    if _key is not None and _w["seq"] >= _WARMUP and _w["calls"] == _w["size"]:
        _window_closes(_w["seq"])
    return out
