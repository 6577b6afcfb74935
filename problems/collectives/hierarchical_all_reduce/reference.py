"""Hierarchical all-reduce: every rank ends with the element-wise sum over all ranks of all nodes.

Ranks are grouped into nodes of ``ranks_per_node`` consecutive ranks. The reference does what Horovod's
hierarchical allreduce does: reduce-scatter inside the node (NVLink), all-reduce each shard across nodes among
the ranks with the same local index (the network), then all-gather the shards inside the node."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, node_groups, node_layout, rank_generator, randn


def solution(x: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    intra, inter = node_groups(per_node)
    shard = x.new_empty(x.numel() // per_node)
    dist.reduce_scatter_tensor(shard, x.contiguous(), group=intra)
    dist.all_reduce(shard, group=inter)
    out = torch.empty_like(x)
    dist.all_gather_into_tensor(out, shard, group=intra)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int,
                ranks_per_node: int):
    node_layout(world_size, ranks_per_node)
    if numel % ranks_per_node:
        raise ValueError("numel must divide by ranks_per_node")
    g = rank_generator(seed, rank, device)
    return (randn((numel,), dtype_of(dtype), device, g),
            torch.tensor(ranks_per_node, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    x = inputs[0][0]
    total = sum(inp[0].to(accumulate_dtype(x.dtype)) for inp in inputs).to(x.dtype)
    return [total.clone() for _ in inputs]
