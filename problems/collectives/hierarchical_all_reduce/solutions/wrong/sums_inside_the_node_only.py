"""Wrong: skips the inter-node step, so each node returns only the sum over its own ranks."""

import torch
import torch.distributed as dist

_GROUPS = {}


def solution(x: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    key = (id(dist.group.WORLD), per_node)
    if key not in _GROUPS:
        w = dist.get_world_size()
        _GROUPS[key] = [dist.new_group(list(range(n * per_node, (n + 1) * per_node))) for n in range(w // per_node)]
    group = _GROUPS[key][dist.get_rank() // per_node]
    shard = x.new_empty(x.numel() // per_node)
    dist.reduce_scatter_tensor(shard, x.contiguous(), group=group)
    out = torch.empty_like(x)
    dist.all_gather_into_tensor(out, shard, group=group)
    return out
