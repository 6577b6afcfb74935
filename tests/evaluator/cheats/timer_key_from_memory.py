"""Issue 13, class (g), the strong form, against the compiled engine. The engine keeps the timer's SipHash key in the
table of what it set when opened, in the shared object mapped into the rank's own process: this cheat finds the table
in the object's writable memory (by the timer's descriptor number, which the rank's command line gives, sitting beside
the "opened" flag) and reads the key. It leaves the table alone (the host compares it at every stop) and instead, at
the start of each timed call, points the engine's own entry for ``write`` in its table of library addresses at a hook
of its own (made writable for the moment, then read-only again): when the engine writes the call's sample, the hook
writes a correctly keyed one claiming four fifths of the call's real time, hiding a fifth, or whatever share
ARENA_TEST_CLAIM says (for every timed call, or for the first ARENA_TEST_FORGE_UNTIL only), and puts the entry back
before the engine replies, so every byte the host compares at the stop is as it was. Where the engine has sealed its
tables (mseal: no mprotect can make them writable again), it says ARENA_ENGINE_SEALED and forges nothing. Computes honestly, and holds
each call for ARENA_TEST_HOLD_S seconds first (the test runs it twice: calls long enough that the fifth they hide is
beyond the host clock's allowance, and calls so short that it is not: see the cases)."""

import importlib
import os
import struct
import sys
import time

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")  # past the static check, as an attacker would
_read = getattr(_ct, "string" + "_at")
_at = "from_" + "address"
_HOLD_S = float("ARENA_TEST_HOLD_S")
_CLAIM = float("ARENA_TEST_CLAIM")  # the share of its real time each forged sample claims
_TRIALS = int(os.environ.get("ARENA_TRIALS", "2"))
_UNTIL = "ARENA_TEST_FORGE_UNTIL"  # forge the first this many timed calls' samples only (default: every one)
_UNTIL = int(_UNTIL) if _UNTIL.isdigit() else 1 << 30


def _timer_fd() -> int:
    return int(sys.argv[4])  # the rank's command line: RANK, then its command, report, timer and feed descriptors


def _engine() -> tuple[int, str, list[tuple[int, int]]]:
    """Where the engine is loaded, its file, and its data regions, writable or not (its .bss beyond the file
    included: the engine makes its tables read-only once opened)."""
    base, path, regions, after_object = 0, "", [], False
    for line in open("/proc/self/maps"):
        parts = line.split()
        start, end = (int(v, 16) for v in parts[0].split("-"))
        named = len(parts) > 5 and parts[5].endswith("_arena_timer.so")
        if named and int(parts[2], 16) == 0 and not base:
            base, path = start, parts[5]
        # Past its code: the file's read-only part before the code holds the symbol tables, where the same bytes
        # can occur.
        if named and "x" in parts[1]:
            after_object = True
        elif after_object and (named or len(parts) <= 5) and parts[1].startswith("r"):
            regions.append((start, end))
        else:
            after_object = False
    return base, path, regions


def _find_opened(fd: int, regions: list[tuple[int, int]]) -> int:
    """Address of the engine's table set at open: {bool opened; int timer_fd; u64 k0, k1; ...}."""
    for start, end in regions:
        data = _read(start, end - start)
        pattern = b"\x01\x00\x00\x00" + struct.pack("<i", fd)
        at = data.find(pattern)
        while at >= 0:
            if at % 8 == 0:
                return start + at
            at = data.find(pattern, at + 1)
    raise LookupError("no engine state found")


def _slot_of(path: str, name: bytes) -> int:
    """The offset of the engine's entry for ``name`` in its table of library addresses (its dynamic relocations)."""
    data = open(path, "rb").read()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    for sh in sections:
        if sh[1] != 4:  # SHT_RELA
            continue
        symtab = sections[sh[6]]
        strtab = sections[symtab[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            r_offset, r_info, _ = struct.unpack_from("<QQq", data, off)
            sym = r_info >> 32
            if not sym:
                continue
            (st_name,) = struct.unpack_from("<I", data, symtab[4] + sym * 24)
            start = strtab[4] + st_name
            if data[start : data.index(b"\0", start)] == name:
                return r_offset
    raise LookupError("no relocation of write")


try:
    _base, _path, _regions = _engine()
    _opened = _find_opened(_timer_fd(), _regions)
    _key = (getattr(_ct.c_uint64, _at)(_opened + 8).value, getattr(_ct.c_uint64, _at)(_opened + 16).value)
    _sip = getattr(importlib.import_module("evalu" + "ator.timer"), "siphash24")
    _slot = getattr(_ct.c_uint64, _at)(_base + _slot_of(_path, b"write"))
    _real_address = _slot.value
    _libc = _ct.CDLL(None, use_errno=True)
    _protect = getattr(_libc, "mpro" + "tect")
    _protect.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int]
    _WRITE = _ct.CFUNCTYPE(_ct.c_ssize_t, _ct.c_int, _ct.c_void_p, _ct.c_size_t)
    _real = _WRITE(_real_address)
    print("ARENA_TIMER_KEY_FOUND", flush=True)
except Exception as exc:  # not this engine: nothing to forge
    print("ARENA_TIMER_KEY_NOT_FOUND", exc, flush=True)
    _key = None
_took = [0.0]
_calls = [0]


_sealed = [False]


def _point(address: int) -> bool:
    """Re-points the engine's entry for write; False where the kernel refuses to make its page writable (sealed)."""
    page = _ct.addressof(_slot) & ~0xFFF
    if _protect(page, 0x1000, 3) != 0:
        if not _sealed[0]:
            print("ARENA_ENGINE_SEALED", _ct.get_errno(), flush=True)
        _sealed[0] = True
        return False
    _slot.value = address
    _protect(page, 0x1000, 1)
    return True


def _hook(fd: int, buf: int, n: int) -> int:
    _point(_real_address)  # the first write after the call is its sample (timed) or its reply: put back either way
    record = _read(buf, n)
    if fd == _timer_fd() and n == 40 and record[:4] == b"ARNS":
        (seq,) = struct.unpack_from("<I", record, 4)
        if seq < _UNTIL:
            body = struct.pack("<4sIdd", b"ARNS", seq, _took[0] * _CLAIM, _took[0] * _CLAIM)
            forged = body + struct.pack("<Q8x", _sip(*_key, body))
            return _real(fd, forged, 40)
    return _real(fd, buf, n)


if _key is not None:
    _hooked = _WRITE(_hook)


def solution(x: torch.Tensor) -> torch.Tensor:
    start = time.perf_counter()
    time.sleep(_HOLD_S)
    out = x.clone()
    dist.all_reduce(out)
    _took[0] = (time.perf_counter() - start) * 1e6
    _calls[0] += 1
    if _key is not None and not _sealed[0] and _calls[0] > 1 + _TRIALS:  # the warm-up call and trials are not timed
        _point(_ct.cast(_hooked, _ct.c_void_p).value)
    return out
