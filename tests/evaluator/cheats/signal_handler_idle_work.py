"""Class: work outside the timed calls through a signal handler. Installs a handler for SIGALRM and an interval timer,
so that code of the solution runs while its rank waits for the host (between calls, off every clock). Signal
dispositions belong to the evaluator: the engine puts back the harness's disposition (ignore, for the timers'
signals) the moment a call returns, so the handler never runs between calls and buys nothing."""

import importlib

import torch
import torch.distributed as dist

_sig = importlib.import_module("sig" + "nal")  # past the static check: the rule must hold at run time
_install, _timer = getattr(_sig, "sig" + "nal"), getattr(_sig, "set" + "itimer")
_ticks = [0]


def _busy(signum, frame):
    _ticks[0] += 1


def solution(x: torch.Tensor) -> torch.Tensor:
    if not _ticks[0]:
        _ticks[0] = 1
        _install(_sig.SIGALRM, _busy)
        _timer(_sig.ITIMER_REAL, 0.001, 0.001)
    out = x.clone()
    dist.all_reduce(out)
    return out
