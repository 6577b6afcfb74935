"""Class: a system-call filter of the solution's own with a user-space listener (SECCOMP_FILTER_FLAG_NEW_LISTENER).
Installed on the thread that later serves the host's commands, it would hand each of the engine's writes to the
report or timer descriptor to a thread of the solution's, which could answer "written" for it and write an edited
line itself: every check the engine makes on its descriptors would pass, since they are never touched. The channel
lock the engine sets before the load ends the rank at any new filter."""

import importlib
import struct

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")
_libc = _ct.CDLL(None, use_errno=True)
# A one-instruction program that allows everything: enough to get a listener if filters could still be added.
_ALLOW = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
_insns = _ct.create_string_buffer(_ALLOW)
_prog = struct.pack("=HxxxxxxQ", 1, _ct.addressof(_insns))
_prog_buf = _ct.create_string_buffer(_prog)
_libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
_listener = _libc.syscall(317, 1, 8, _prog_buf)  # seccomp(SET_MODE_FILTER, FLAG_NEW_LISTENER, &prog)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
