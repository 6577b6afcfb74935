"""Which communication a solution used, counted while its calls run: the torch.distributed functions, the process
group's methods and the functional collectives. This sets the result's collectives flags from what was called, not
from what the source text mentions; it is a report for readers, not a rule (code that reaches the C++ bindings by
another path is not counted)."""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from typing import Any, Callable, Iterator

import torch.distributed as dist

_API = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
        "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "broadcast", "broadcast_object_list", "reduce",
        "gather", "scatter", "send", "recv", "isend", "irecv", "batch_isend_irecv", "barrier")
_GROUP = ("allreduce", "allgather", "_allgather_base", "allgather_into_tensor_coalesced", "reduce_scatter",
          "_reduce_scatter_base", "alltoall", "alltoall_base", "broadcast", "reduce", "gather", "scatter", "send",
          "recv", "barrier")
_FUNCTIONAL = ("all_reduce", "all_gather_tensor", "reduce_scatter_tensor", "all_to_all_single", "broadcast",
               "all_reduce_coalesced", "all_gather_into_tensor_coalesced")
POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})


class CallCounter:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.flag = [False]  # counting while true: a list's item, set without any code of the solution's running
        self._wrap(dist, _API, "torch.distributed")
        self._wrap(dist.ProcessGroup, _GROUP, "ProcessGroup")
        try:
            import torch.distributed._functional_collectives as funcol
        except ImportError:
            funcol = None
        if funcol is not None:
            self._wrap(funcol, _FUNCTIONAL, "functional")

    def _wrap(self, owner: Any, names: tuple[str, ...], label: str) -> None:
        for name in names:
            original = getattr(owner, name, None)
            if original is None:
                continue
            counted = self._counted(original, f"{label}.{name}")
            setattr(owner, name, counted)
            if owner is dist and name in ("isend", "irecv"):
                # P2POp accepts only the module's own isend/irecv objects: the module that checks sees the same one.
                c10d = dist.distributed_c10d
                if getattr(c10d, name, None) is original:
                    setattr(c10d, name, counted)

    def _counted(self, original: Callable[..., Any], label: str) -> Callable[..., Any]:
        counts, flag = self.counts, self.flag

        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if flag[0]:
                counts[label] += 1
            return original(*args, **kwargs)

        return counted

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        self.flag[0] = True
        try:
            yield
        finally:
            self.flag[0] = False

    def take(self) -> dict[str, int]:
        out = dict(self.counts)
        self.counts.clear()
        return out
