"""Class: the rank's report channel taken over, so that every rule the engine reports from inside the process becomes
optional. At import the solution keeps a private copy of its report descriptor (its argv[3]) and puts a pipe of its
own in the descriptor's place; a thread named like gloo's reads each line written to it, empties the fields that
carry rule breaks and passes the line on through the private copy. Then it breaks a rule the reports carry: it turns
NCCL's NVLink multicast variable on in the process environment (refused when reported). Believed, the edited reports let it pass.
The engine checks its channels before every write and ends the rank instead."""

import importlib
import json
import os
import sys
import threading

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")
_libc = _ct.CDLL(None)
_report = int(sys.argv[3])
_private = os.dup(_report)
_read, _write = os.pipe()
os.dup2(_write, _report)
_RULES = ("multicast_changed", "signals_changed", "inputs_swapped", "aliases", "subclasses")


def _forward() -> None:
    _libc.prctl(15, b"gloo_forward", 0, 0, 0)  # PR_SET_NAME: named like gloo's own threads
    pending = b""
    while True:
        chunk = os.read(_read, 1 << 16)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            try:
                report = json.loads(line)
                for key in _RULES:
                    if key in report:
                        report[key] = []
                line = json.dumps(report).encode()
            except ValueError:
                pass
            os.write(_private, line + b"\n")


threading.Thread(target=_forward, daemon=True).start()
_libc.setenv(b"NCCL_" + b"NV" + b"LS_" + b"ENABLE", b"1", 1)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
