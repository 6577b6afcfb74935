"""Issue 13, class (g). Finds the compiled timer's descriptor through /proc/self/fd (and the rank's command line,
which names it) and writes forged samples to it on every call — a tenth of a microsecond, with the sequence number
the host expects and a MAC under a guessed key — so the host would read a huge speedup. Computes honestly."""

import os
import stat
import struct
import sys

import torch
import torch.distributed as dist

_seq = 0


def _timer_fds() -> list[int]:
    fds = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                fds.append(fd)
        except OSError:
            pass
    words = sys.argv[1:]
    named = int(words[3]) if len(words) > 3 and words[3].isdigit() else None  # worker RANK CMD REPORT TIMER FEED
    return [named] if named in fds else fds


_FDS = _timer_fds()


def solution(x: torch.Tensor) -> torch.Tensor:
    global _seq
    record = struct.pack("<4sIddQ8x", b"ARNS", _seq, 0.1, 0.1, 0)
    _seq += 1
    for fd in _FDS:
        try:
            os.write(fd, record)
        except OSError:
            pass
    out = x.clone()
    dist.all_reduce(out)
    return out
