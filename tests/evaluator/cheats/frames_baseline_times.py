"""Issue 13, class (c), timing side. Computes honestly, but on every call walks the caller's frames (through
``logging.currentframe`` and ``operator.attrgetter``) looking for the recorded baseline times to inflate and its
own samples to shrink (lists of floats, objects with ``times_us``/``samples``), and replaces the timer object it
finds on the timing loop with one that reports a tenth of the time. The samples the host reads come from the
compiled timer's descriptor, so none of this shows up in the figures."""

import importlib
import operator

import torch
import torch.distributed as dist

_logging = importlib.import_module("logging")
_back = operator.attrgetter("f_" + "back")
_locals = operator.attrgetter("f_" + "locals")


class _FastTimer:
    def __init__(self, real):
        self.real = real

    def measure(self, prepare, call):
        us, launch, out = self.real.measure(prepare, call)
        return us / 10.0, launch / 10.0, out

    def __getattr__(self, name):
        return getattr(self.real, name)


def _tamper(obj, depth=0) -> None:
    if depth > 2 or obj is None:
        return
    for attr in ("times_us", "baseline", "baselines"):
        value = getattr(obj, attr, None)
        if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
            value[:] = [v * 10.0 for v in value]
    samples = getattr(obj, "samples", None)
    if isinstance(samples, list):
        samples[:] = [(s[0] / 10.0, s[1]) if isinstance(s, tuple) else s for s in samples]
    timer = getattr(obj, "timer", None)
    if timer is not None and hasattr(timer, "measure") and not isinstance(timer, _FastTimer):
        try:
            obj.timer = _FastTimer(timer)
        except Exception:
            pass
    loop = getattr(obj, "loop", None)
    if loop is not None:
        _tamper(loop, depth + 1)


def solution(x: torch.Tensor) -> torch.Tensor:
    frame = getattr(_logging, "current" + "frame")()
    while frame is not None:
        for value in list(_locals(frame).values()):
            _tamper(value)
        frame = _back(frame)
    out = x.clone()
    dist.all_reduce(out)
    return out
