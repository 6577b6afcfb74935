"""Starts, on its first call, the host's genuine /bin/sh (a build tool, run from where the host installed it) with a
library preloaded from /tmp, and leaves it running through the trials and the timing: a preloaded library's code runs
in that shell, so the shell is a helper of the solution's, whatever program file it runs. (A copy of a system library
stands for the solution's own native code.) Then computes honestly: what it tests is only that the helper is seen."""

import importlib
import os
import shutil

import torch
import torch.distributed as dist

_started = False
_shell: list = []


def solution(x: torch.Tensor) -> torch.Tensor:
    global _started
    if not _started:
        _started = True
        library = f"/tmp/libarena-{os.getpid()}.so"  # one per rank: the ranks share /tmp
        shutil.copy(next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                                     "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6") if os.path.exists(p)),
                    library)
        sp = importlib.import_module("sub" + "process")
        # The shell waits on its own input (a builtin: no child process of another program to be seen).
        _shell.append(sp.Popen(["/bin/sh", "-c", "read line; : arena_preloaded_shell"],
                               env={**os.environ, "LD_PRELOAD": library}, stdin=sp.PIPE, stdout=sp.DEVNULL,
                               stderr=sp.DEVNULL))
    out = x.clone()
    dist.all_reduce(out)
    return out
