"""Counts the bytes a reference sends over the interconnect, by wrapping the torch.distributed calls it makes.

The registry's audit (tests/problems/test_audit.py) and ``arena check-problem`` run each reference at its small size on
CPU ranks inside :func:`counting` and check that the roofline's ``link_bytes_per_rank`` is at most what the reference
itself sends per rank, and ``internode_bytes_per_rank`` at most what it sends to other nodes: a roofline above what
the baseline moves is not a lower bound, and would refuse an honest solution as faster than physics.

A link carries its bandwidth in each direction, so what bounds a rank is the larger of what it sends and what it
receives (a gather's root receives W-1 tensors and sends nothing). Each collective is counted as the bytes one rank
sends to and receives from each peer in the usual bandwidth-optimal algorithm for it (ring or pairwise), which is
what NCCL does at the sizes where bandwidth matters (sent / received):

    all_reduce              2 (n-1)/n x the buffer, to the next rank of the ring / from the previous one
    all_gather(_into_tensor)  (n-1) x the local shard, the same way
    reduce_scatter(_tensor) (n-1)/n x the input, the same way
    all_to_all(_single)     each block to the rank it is addressed to / each block from the rank that sent it
    reduce                  a ring reduce-scatter, then each 1/n share to the root
    broadcast               a pipelined chain src, src+1, ...: the buffer to the next rank (but on the last) / from
                            the previous one (but on the source)
    gather                  the tensor from each non-root to the root
    scatter                 one tensor from the root to each non-root
    isend, send / irecv, recv  the tensor, to dst / from src

where n is the size of the group the call runs on and the ring runs in the group's rank order. Given a node layout
(``ranks_per_node``), the bytes to and from peers on other nodes are summed apart: for a ring over several nodes that
is the ring's crossing ranks, as NCCL's rings cross each node boundary once. The functions are replaced both as
attributes of ``torch.distributed`` (what references call) and of ``torch.distributed.distributed_c10d`` (what
``P2POp`` checks its op against and ``batch_isend_irecv`` calls back, so batched sends are counted once, through
isend); everything is restored on exit.
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
    """Bytes this rank sent and received, in total, to and from ranks on other nodes (when a node layout is given),
    and per collective name (for messages that say which call moved what)."""

    sent: float = 0.0
    received: float = 0.0
    internode_sent: float = 0.0
    internode_received: float = 0.0
    by_call: dict[str, tuple[float, float]] = field(default_factory=dict)

    def add(self, name: str, flows: list[Flow], ranks_per_node: int | None = None) -> None:
        sent = sum(f.sent for f in flows)
        received = sum(f.received for f in flows)
        self.sent += sent
        self.received += received
        if ranks_per_node:
            node = dist.get_rank() // ranks_per_node
            remote = [f for f in flows if f.peer is not None and f.peer // ranks_per_node != node]
            self.internode_sent += sum(f.sent for f in remote)
            self.internode_received += sum(f.received for f in remote)
        before = self.by_call.get(name, (0.0, 0.0))
        self.by_call[name] = (before[0] + sent, before[1] + received)

    @property
    def busiest_direction(self) -> float:
        """What bounds this rank on a link of a given bandwidth per direction."""
        return max(self.sent, self.received)

    @property
    def busiest_internode_direction(self) -> float:
        """What bounds this rank on its network link (a NIC carries its bandwidth in each direction)."""
        return max(self.internode_sent, self.internode_received)


@dataclass(frozen=True)
class Flow:
    """Bytes this rank sends to and receives from one peer (a global rank; None where the call does not say)."""

    peer: int | None
    sent: float = 0.0
    received: float = 0.0


def _nbytes(t: Any) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def _group_size(group: Any) -> int:
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _group_rank(group: Any) -> int:
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _global(group: Any, group_rank: int) -> int:
    return dist.get_global_rank(group, group_rank) if group is not None else group_rank


def _arg(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


def _ring(group: Any, sent: float, received: float) -> list[Flow]:
    """A ring in group order: this rank sends to the next and receives from the previous."""
    n, me = _group_size(group), _group_rank(group)
    if n == 1:
        return []
    return [Flow(_global(group, (me + 1) % n), sent=sent), Flow(_global(group, (me - 1) % n), received=received)]


def _all_reduce(args: tuple, kwargs: dict) -> list[Flow]:
    group = _arg(args, kwargs, 2, "group")
    n = _group_size(group)
    nbytes = 2 * (n - 1) / n * _nbytes(args[0])
    return _ring(group, nbytes, nbytes)


def _all_gather_into_tensor(args: tuple, kwargs: dict) -> list[Flow]:
    group = _arg(args, kwargs, 2, "group")
    nbytes = (_group_size(group) - 1) * _nbytes(_arg(args, kwargs, 1, "input_tensor"))
    return _ring(group, nbytes, nbytes)


def _all_gather(args: tuple, kwargs: dict) -> list[Flow]:
    group = _arg(args, kwargs, 2, "group")
    nbytes = (_group_size(group) - 1) * _nbytes(_arg(args, kwargs, 1, "tensor"))
    return _ring(group, nbytes, nbytes)


def _reduce_scatter_tensor(args: tuple, kwargs: dict) -> list[Flow]:
    group = _arg(args, kwargs, 3, "group")
    n = _group_size(group)
    nbytes = (n - 1) / n * _nbytes(_arg(args, kwargs, 1, "input"))
    return _ring(group, nbytes, nbytes)


def _reduce_scatter(args: tuple, kwargs: dict) -> list[Flow]:
    group = _arg(args, kwargs, 3, "group")
    n = _group_size(group)
    nbytes = (n - 1) / n * sum(_nbytes(t) for t in _arg(args, kwargs, 1, "input_list") or [])
    return _ring(group, nbytes, nbytes)


def _blocks(t: torch.Tensor, splits: Any, n: int) -> list[float]:
    """Bytes of each of ``t``'s n row blocks (equal blocks when no splits are given)."""
    total = _nbytes(t)
    if not splits:
        return [total / n] * n
    rows = t.shape[0] if t.dim() else 1
    row_bytes = total / rows if rows else 0
    return [int(s) * row_bytes for s in splits]


def _all_to_all_single(args: tuple, kwargs: dict) -> list[Flow]:
    out, inp = _arg(args, kwargs, 0, "output"), _arg(args, kwargs, 1, "input")
    group = _arg(args, kwargs, 4, "group")
    n, me = _group_size(group), _group_rank(group)
    sent = _blocks(inp, _arg(args, kwargs, 3, "input_split_sizes"), n)
    received = _blocks(out, _arg(args, kwargs, 2, "output_split_sizes"), n)
    return [Flow(_global(group, j), sent[j], received[j]) for j in range(n) if j != me]


def _all_to_all(args: tuple, kwargs: dict) -> list[Flow]:
    outs, inps = _arg(args, kwargs, 0, "output_tensor_list"), _arg(args, kwargs, 1, "input_tensor_list")
    group = _arg(args, kwargs, 2, "group")
    n, me = _group_size(group), _group_rank(group)
    return [Flow(_global(group, j), _nbytes(inps[j]), _nbytes(outs[j])) for j in range(n) if j != me]


def _reduce(args: tuple, kwargs: dict) -> list[Flow]:
    """A ring reduce-scatter, then every shard to the root."""
    group = _arg(args, kwargs, 3, "group")
    n = _group_size(group)
    root = _arg(args, kwargs, 1, "dst", 0)
    nbytes = _nbytes(args[0])
    shard = (n - 1) / n * nbytes
    flows = _ring(group, shard, shard)
    if dist.get_rank() == root:
        flows += [Flow(_global(group, j), received=nbytes / n) for j in range(n) if _global(group, j) != root]
    else:
        flows.append(Flow(root, sent=nbytes / n))
    return flows


def _broadcast(args: tuple, kwargs: dict) -> list[Flow]:
    """A pipelined chain src, src+1, ..., src-1 in group order: the last one forwards nothing."""
    group = _arg(args, kwargs, 2, "group")
    n, me = _group_size(group), _group_rank(group)
    if n == 1:
        return []
    src = _arg(args, kwargs, 1, "src", 0)
    src_in_group = dist.get_group_rank(group, src) if group is not None else src
    nbytes = float(_nbytes(args[0]))
    flows = []
    if me != (src_in_group - 1) % n:
        flows.append(Flow(_global(group, (me + 1) % n), sent=nbytes))
    if me != src_in_group:
        flows.append(Flow(_global(group, (me - 1) % n), received=nbytes))
    return flows


def _gather(args: tuple, kwargs: dict) -> list[Flow]:
    nbytes = float(_nbytes(args[0]))
    group = _arg(args, kwargs, 3, "group")
    root = _arg(args, kwargs, 2, "dst", 0)
    if dist.get_rank() == root:
        return [
            Flow(_global(group, j), received=nbytes) for j in range(_group_size(group)) if _global(group, j) != root
        ]
    return [Flow(root, sent=nbytes)]


def _scatter(args: tuple, kwargs: dict) -> list[Flow]:
    nbytes = float(_nbytes(args[0]))
    group = _arg(args, kwargs, 3, "group")
    root = _arg(args, kwargs, 2, "src", 0)
    if dist.get_rank() != root:
        return [Flow(root, received=nbytes)]
    pieces = _arg(args, kwargs, 1, "scatter_list") or []
    return [Flow(_global(group, j), sent=float(_nbytes(p))) for j, p in enumerate(pieces) if _global(group, j) != root]


def _peer(args: tuple, kwargs: dict, name: str) -> int | None:
    """The global rank of a point-to-point call's peer: ``dst``/``src``, or ``group_dst``/``group_src`` within its
    group (what batch_isend_irecv passes)."""
    peer = _arg(args, kwargs, 1, name)
    if peer is None and kwargs.get(f"group_{name}") is not None:
        group = _arg(args, kwargs, 2, "group")
        peer = _global(group, kwargs[f"group_{name}"]) if group is not None else kwargs[f"group_{name}"]
    return peer


def _isend(args: tuple, kwargs: dict) -> list[Flow]:
    return [Flow(_peer(args, kwargs, "dst"), sent=float(_nbytes(_arg(args, kwargs, 0, "tensor"))))]


def _irecv(args: tuple, kwargs: dict) -> list[Flow]:
    return [Flow(_peer(args, kwargs, "src"), received=float(_nbytes(_arg(args, kwargs, 0, "tensor"))))]


_COUNTERS: dict[str, Callable[[tuple, dict], list[Flow]]] = {
    "all_reduce": _all_reduce,
    "all_gather_into_tensor": _all_gather_into_tensor,
    "all_gather": _all_gather,
    "reduce_scatter_tensor": _reduce_scatter_tensor,
    "reduce_scatter": _reduce_scatter,
    "all_to_all_single": _all_to_all_single,
    "all_to_all": _all_to_all,
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
def counting(ranks_per_node: int | None = None) -> Iterator[Traffic]:
    """Within the block, every counted torch.distributed call adds its bytes to the yielded :class:`Traffic`; with
    ``ranks_per_node`` (ranks ``n*ranks_per_node ... (n+1)*ranks_per_node - 1`` are node n), also the bytes to and
    from ranks on other nodes."""
    traffic = Traffic()
    originals = {name: getattr(c10d, name) for name in _COUNTERS}

    def wrap(name: str, original: Callable) -> Callable:
        def counted(*args: Any, **kwargs: Any) -> Any:
            traffic.add(name, _COUNTERS[name](args, kwargs), ranks_per_node)
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
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=world_size, timeout=timedelta(seconds=120)
    )
    try:
        preset = problem.presets["small"]
        params = problem.params("small", overrides)
        inputs = module.make_inputs(rank, world_size, 1234, torch.device("cpu"), preset.dtype, **params)
        with counting(params.get("ranks_per_node")) as traffic:
            module.solution(*inputs)
        torch.save(
            {
                "busiest": traffic.busiest_direction,
                "busiest_internode": traffic.busiest_internode_direction,
                "by_call": traffic.by_call,
            },
            os.path.join(out, f"rank{rank}.pt"),
        )
        dist.barrier()
    finally:
        dist.destroy_process_group()


def reference_traffic(problem: Any, world_size: int, overrides: dict | None = None) -> list[dict]:
    """Per rank of a registry ``Problem``'s reference run at the small preset (with ``overrides``) on ``world_size``
    gloo ranks: ``busiest``, the bytes it sent or received, whichever is more; ``busiest_internode``, the same for the
    bytes to and from other nodes (0 for a problem without ``ranks_per_node``); and ``by_call``, (sent, received) per
    torch.distributed call."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(
            _rank_traffic,
            args=(problem, world_size, overrides or {}, os.path.join(tmp, "store"), tmp),
            nprocs=world_size,
            join=True,
            start_method="fork",
        )
        return [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(world_size)]
