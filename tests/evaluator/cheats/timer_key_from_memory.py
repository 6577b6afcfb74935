"""Issue 13, class (g), the strong form. The compiled timer keeps its SipHash key, its sequence number and its
descriptor in static variables of the shared object mapped into the rank's own process: this cheat finds them
(the object's symbol table and /proc/self/maps), points the timer's descriptor at /dev/null, and writes its own
correctly keyed samples — a tenth of its real time — to the host's pipe. Computes honestly, and holds each call
for ARENA_TEST_HOLD_S seconds first (the test runs it twice: a call long enough that what the forgery hides is
beyond the host clock's allowance, and one that is not: see the cases)."""

import importlib
import os
import struct
import time

import torch
import torch.distributed as dist

_SO = "/arena/_arena_timer.so"


def _symbols(path: str) -> dict:
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for k in range(sh[5] // 24):
            name_off, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, sh[4] + k * 24)
            start = strtab[4] + name_off
            name = data[start:data.index(b"\0", start)].decode()
            out[name] = value
    return out


def _base() -> int:
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("_arena_timer.so") and line.split()[2] == "00000000":
            return int(line.split("-")[0], 16)
    raise LookupError


_ct = importlib.import_module("c" + "types")


def _cell(kind):
    return lambda address: _ct.cast(_ct.c_void_p(address), _ct.POINTER(kind)).contents


_at, _at_int, _at_u32 = _cell(_ct.c_uint64), _cell(_ct.c_int), _cell(_ct.c_uint32)
try:
    _sym, _b = _symbols(_SO), _base()
    _key = (_at(_b + _sym["k0"]).value, _at(_b + _sym["k1"]).value)
    _fd_var = _at_int(_b + _sym["out_fd"])
    _seq_var = _at_u32(_b + _sym["seq"])
    _sip = getattr(importlib.import_module("evalu" + "ator.timer"), "siphash24")
    _pipe, _null = None, os.open("/dev/null", os.O_WRONLY)
    print("ARENA_TIMER_KEY_FOUND", flush=True)
except Exception as exc:  # not this timer: nothing to forge
    print("ARENA_TIMER_KEY_NOT_FOUND", exc, flush=True)
    _key = None


def _timed() -> bool:
    frame = getattr(importlib.import_module("logging"), "current" + "frame")()
    while frame is not None:
        if getattr(frame, "f_" + "code").co_name == "time" and "worker" in getattr(frame, "f_" + "code").co_filename:
            return True
        frame = getattr(frame, "f_" + "back")
    return False


_HOLD_S = float("ARENA_TEST_HOLD_S")


def solution(x: torch.Tensor) -> torch.Tensor:
    global _pipe
    start = time.perf_counter()
    time.sleep(_HOLD_S)
    out = x.clone()
    dist.all_reduce(out)
    took = (time.perf_counter() - start) * 1e6
    if _key is not None and _timed():
        if _pipe is None:
            _pipe = _fd_var.value
            _fd_var.value = _null  # the timer's own sample of this call goes nowhere
        body = struct.pack("<4sIdd", b"ARNS", _seq_var.value, took / 10.0, took / 10.0)
        os.write(_pipe, body + struct.pack("<Q8x", _sip(*_key, body)))
    return out
