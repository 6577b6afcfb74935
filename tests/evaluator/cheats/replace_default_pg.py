"""Issue 13, class (b). Replaces the default process group (``_world.default_pg``) with one whose all-reduce and
barrier run the solution's code: every collective of a reference that shares the process would then return zeros
(so the "expected" output is zeros), and the harness's own barrier before a timed call would run the real work off
the clock. It also patches ProcessGroup's methods on the class. Then it returns zeros."""

import importlib

import torch

_c10d = importlib.import_module("torch.distributed.distributed_c10d")
_PG = _c10d.ProcessGroup
_real = _c10d._world.default_pg


class _Done:
    def wait(self, *a, **k):
        return True

    def is_completed(self):
        return True


class _Hijacked:
    """Looks like the default group; its collectives zero what they are given."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def allreduce(self, tensors, *a, **k):
        for t in (tensors if isinstance(tensors, list) else [tensors]):
            t.zero_()
        return _Done()

    def barrier(self, *a, **k):
        return _Done()


for _name in ("allreduce", "barrier"):
    try:
        setattr(_PG, _name, getattr(_Hijacked, _name))
    except Exception:
        pass
try:
    _c10d._world.default_pg = _Hijacked(_real)
except Exception:
    pass


def solution(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
