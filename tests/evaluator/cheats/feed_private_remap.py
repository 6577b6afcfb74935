"""Class: the feed's zeroing defeated with the engine left intact. At the end of every call the solution maps its
feed slot again, privately (copy-on-write), over the engine's own view of it: the engine still reads the next
inputs from the file (untouched private pages show the file), but its zeroing lands in private pages, so the file
keeps every input for a peer holding the descriptor. The judge reads the file itself, between windows, and finds it
not zeroed."""

import importlib
import sys

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")
_libc = _ct.CDLL(None, use_errno=True)
_libc.mmap.restype = _ct.c_void_p
_libc.mmap.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int, _ct.c_int, _ct.c_int, _ct.c_long]
_FEED_FD = int(sys.argv[5])  # the rank's command line: RANK, then its command, report, timer and feed descriptors
_remapped = [0]


def _remap_private() -> None:
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) > 5 and "arena-feed" in parts[5] and parts[1][3] == "s":
            start, end = (int(v, 16) for v in parts[0].split("-"))
            # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED over the engine's shared view
            if _libc.mmap(start, end - start, 3, 0x02 | 0x10, _FEED_FD, 0) == start:
                _remapped[0] += 1


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    _remap_private()
    if _remapped[0] == 1:
        print("ARENA_FEED_REMAPPED", file=sys.stderr, flush=True)
    return out
