"""Counts the bytes a reference sends over the interconnect, by wrapping the torch.distributed calls it makes.

The registry's audit (tests/problems/test_audit.py) runs each reference at its small size on CPU ranks inside
:func:`counting` and checks that the roofline's ``link_bytes_per_rank`` is at most what the reference itself sends
per rank: a roofline above what the baseline moves is not a lower bound, and would refuse an honest solution as
faster than physics.

A link carries its bandwidth in each direction, so what bounds a rank is the larger of what it sends and what it
receives (a gather's root receives W-1 tensors and sends nothing). Each collective is counted as the bytes one rank
sends and receives in the usual bandwidth-optimal algorithm for it (ring or pairwise), which is what NCCL does at
the sizes where bandwidth matters (sent / received):

    all_reduce              2 (n-1)/n x the buffer, both ways (reduce-scatter then all-gather)
    all_gather_into_tensor  (n-1) x the local shard, both ways
    reduce_scatter_tensor   (n-1)/n x the input, both ways
    all_to_all_single       the row blocks addressed to other ranks / the row blocks from other ranks
    reduce                  (n-1)/n x the buffer, plus 1/n on non-roots / (n-1)/n, plus the gathered 1/n shares
                            on the root
    broadcast               the buffer on every rank but the last of the chain / the buffer on every rank but the
                            source (pipelined chain)
    gather                  the tensor from each non-root / n-1 tensors on the root
    scatter                 n-1 tensors from the root / one tensor on each non-root
    isend, send / irecv, recv  the tensor

where n is the size of the group the call runs on. The functions are replaced both as attributes of
``torch.distributed`` (what references call) and of ``torch.distributed.distributed_c10d`` (what ``P2POp`` checks
its op against and ``batch_isend_irecv`` calls back, so batched sends are counted once, through isend); everything
is restored on exit.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Iterator

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d


@dataclass
class Traffic:
    """Bytes this rank sent and received, in total and per collective name (for messages that say which call moved
    what)."""

    sent: float = 0.0
    received: float = 0.0
    by_call: dict[str, tuple[float, float]] = field(default_factory=dict)

    def add(self, name: str, sent: float, received: float) -> None:
        self.sent += sent
        self.received += received
        before = self.by_call.get(name, (0.0, 0.0))
        self.by_call[name] = (before[0] + sent, before[1] + received)

    @property
    def busiest_direction(self) -> float:
        """What bounds this rank on a link of a given bandwidth per direction."""
        return max(self.sent, self.received)


def _nbytes(t: Any) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def _group_size(group: Any) -> int:
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _group_rank(group: Any) -> int:
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


def _all_reduce(args: tuple, kwargs: dict) -> tuple[float, float]:
    n = _group_size(_arg(args, kwargs, 2, "group"))
    nbytes = 2 * (n - 1) / n * _nbytes(args[0])
    return nbytes, nbytes


def _all_gather_into_tensor(args: tuple, kwargs: dict) -> tuple[float, float]:
    n = _group_size(_arg(args, kwargs, 2, "group"))
    nbytes = (n - 1) * _nbytes(_arg(args, kwargs, 1, "input_tensor"))
    return nbytes, nbytes


def _reduce_scatter_tensor(args: tuple, kwargs: dict) -> tuple[float, float]:
    n = _group_size(_arg(args, kwargs, 3, "group"))
    nbytes = (n - 1) / n * _nbytes(_arg(args, kwargs, 1, "input"))
    return nbytes, nbytes


def _split_bytes(t: torch.Tensor, splits: Any, n: int, me: int) -> float:
    """Bytes of ``t``'s row blocks other than this rank's (equal blocks when no splits are given)."""
    total = _nbytes(t)
    if not splits:
        return total * (n - 1) / n
    rows = t.shape[0] if t.dim() else 1
    row_bytes = total / rows if rows else 0
    splits = [int(s) for s in splits]
    return (sum(splits) - splits[me]) * row_bytes


def _all_to_all_single(args: tuple, kwargs: dict) -> tuple[float, float]:
    out, inp = _arg(args, kwargs, 0, "output"), _arg(args, kwargs, 1, "input")
    group = _arg(args, kwargs, 4, "group")
    n, me = _group_size(group), _group_rank(group)
    return (_split_bytes(inp, _arg(args, kwargs, 3, "input_split_sizes"), n, me),
            _split_bytes(out, _arg(args, kwargs, 2, "output_split_sizes"), n, me))


def _reduce(args: tuple, kwargs: dict) -> tuple[float, float]:
    group = _arg(args, kwargs, 3, "group")
    n = _group_size(group)
    root = dist.get_rank() == _arg(args, kwargs, 1, "dst", 0)
    nbytes = _nbytes(args[0])
    shard = (n - 1) / n * nbytes
    return (shard + (0 if root else nbytes / n)), (shard + (shard if root else 0))


def _broadcast(args: tuple, kwargs: dict) -> tuple[float, float]:
    group = _arg(args, kwargs, 2, "group")
    n, me = _group_size(group), _group_rank(group)
    src = _arg(args, kwargs, 1, "src", 0)
    src_in_group = dist.get_group_rank(group, src) if group is not None else src
    last = (src_in_group - 1) % n  # the chain runs src, src+1, ..., src-1: the last one forwards nothing
    nbytes = float(_nbytes(args[0]))
    return (0.0 if me == last else nbytes), (0.0 if me == src_in_group else nbytes)


def _gather(args: tuple, kwargs: dict) -> tuple[float, float]:
    nbytes = float(_nbytes(args[0]))
    if dist.get_rank() == _arg(args, kwargs, 2, "dst", 0):
        return 0.0, (_group_size(_arg(args, kwargs, 3, "group")) - 1) * nbytes
    return nbytes, 0.0


def _scatter(args: tuple, kwargs: dict) -> tuple[float, float]:
    nbytes = float(_nbytes(args[0]))
    if dist.get_rank() != _arg(args, kwargs, 2, "src", 0):
        return 0.0, nbytes
    pieces = _arg(args, kwargs, 1, "scatter_list") or []
    return float(sum(_nbytes(p) for p in pieces)) - nbytes, 0.0


def _isend(args: tuple, kwargs: dict) -> tuple[float, float]:
    return float(_nbytes(_arg(args, kwargs, 0, "tensor"))), 0.0


def _irecv(args: tuple, kwargs: dict) -> tuple[float, float]:
    return 0.0, float(_nbytes(_arg(args, kwargs, 0, "tensor")))


_COUNTERS: dict[str, Callable[[tuple, dict], tuple[float, float]]] = {
    "all_reduce": _all_reduce,
    "all_gather_into_tensor": _all_gather_into_tensor,
    "reduce_scatter_tensor": _reduce_scatter_tensor,
    "all_to_all_single": _all_to_all_single,
    "reduce": _reduce,
    "broadcast": _broadcast,
    "gather": _gather,
    "scatter": _scatter,
    "isend": _isend,
    "send": _isend,
    "irecv": _irecv,
    "recv": _irecv,
}


@contextlib.contextmanager
def counting() -> Iterator[Traffic]:
    """Within the block, every counted torch.distributed call adds its bytes to the yielded :class:`Traffic`."""
    traffic = Traffic()
    originals = {name: getattr(c10d, name) for name in _COUNTERS}

    def wrap(name: str, original: Callable) -> Callable:
        def counted(*args: Any, **kwargs: Any) -> Any:
            traffic.add(name, *_COUNTERS[name](args, kwargs))
            return original(*args, **kwargs)
        counted.__wrapped__ = original  # type: ignore[attr-defined]
        return counted

    try:
        for name, original in originals.items():
            counted = wrap(name, original)
            setattr(c10d, name, counted)
            setattr(dist, name, counted)
        yield traffic
    finally:
        for name, original in originals.items():
            setattr(c10d, name, original)
            setattr(dist, name, original)


def _rank_traffic(rank: int, problem: Any, world_size: int, overrides: dict, store: str, out: str) -> None:
    torch.set_num_threads(1)
    module = problem.load_reference()
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=120))
    try:
        preset = problem.presets["small"]
        inputs = module.make_inputs(rank, world_size, 1234, torch.device("cpu"), preset.dtype,
                                    **problem.params("small", overrides))
        with counting() as traffic:
            module.solution(*inputs)
        torch.save({"busiest": traffic.busiest_direction, "by_call": traffic.by_call},
                   os.path.join(out, f"rank{rank}.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def reference_traffic(problem: Any, world_size: int, overrides: dict | None = None) -> list[dict]:
    """Per rank of a registry ``Problem``'s reference run at the small preset (with ``overrides``) on ``world_size``
    gloo ranks: ``busiest``, the bytes it sent or received, whichever is more, and ``by_call``, (sent, received)
    per torch.distributed call."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(_rank_traffic, args=(problem, world_size, overrides or {}, os.path.join(tmp, "store"), tmp),
                           nprocs=world_size, join=True, start_method="fork")
        return [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(world_size)]
