"""The engine's tables are sealed, but the process group's backend they point to is an object on the heap: this cheat
finds the engine's table of what it set when opened (as timer_key_from_memory.py does), follows its backend pointer
and re-points the backend's table of virtual functions at a copy of its own, in the first timed call. The copy holds
the same functions, so nothing else changes; a copy with one entry of its own would run the solution's code as the
engine's alignment before every timed call. Computes honestly."""

import importlib
import os
import struct
import sys

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")  # past the static check, as an attacker would
_read = getattr(_ct, "string" + "_at")
_word = getattr(_ct.c_uint64, "from_" + "address")
_TRIALS = int(os.environ.get("ARENA_TRIALS", "2"))
_BACKEND_AT = 56  # {bool opened; int timer_fd; u64 k0, k1; bool cuda; int device; void *stream, *ev0, *ev1; backend}
_calls = [0]
_copy = []


def _fixed_table() -> int:
    """The table's address: in the engine's data, past its code (its file's read-only part, before the code, holds
    the symbol tables, where the same bytes can occur)."""
    pattern = b"\x01\x00\x00\x00" + struct.pack("<i", int(sys.argv[4]))  # opened, then the timer's descriptor
    past_code = False
    for line in open("/proc/self/maps"):
        parts = line.split()
        start, end = (int(v, 16) for v in parts[0].split("-"))
        named = len(parts) > 5 and parts[5].endswith("_arena_timer.so")
        if named and "x" in parts[1]:
            past_code = True
            continue
        if past_code and (named or len(parts) <= 5) and parts[1].startswith("r"):
            data = _read(start, end - start)
            at = data.find(pattern)
            while at >= 0:
                if at % 8 == 0:
                    return start + at
                at = data.find(pattern, at + 1)
        elif past_code and not named:
            past_code = False  # another object's mapping: the engine's data is behind
    raise LookupError("no engine table found")


def _swap_vtable() -> None:
    backend = _word(_fixed_table() + _BACKEND_AT).value
    vptr = _word(backend)
    # Two words before the address point (offset to top, type information), then the functions.
    words = (_ct.c_uint64 * 420).from_buffer_copy(_read(vptr.value - 16, 420 * 8))
    _copy.append(words)
    vptr.value = _ct.addressof(words) + 16
    print("ARENA_BACKEND_VTABLE_SWAPPED", flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    _calls[0] += 1
    if _calls[0] == 2 + _TRIALS:  # the first timed call (after the warm-up call and the trials)
        _swap_vtable()
    return out
