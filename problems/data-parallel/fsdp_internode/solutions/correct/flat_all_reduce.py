"""All-gather inside the node, then a flat all-reduce of the full gradient over every rank, keeping the local shard."""

import torch
import torch.distributed as dist

_GROUPS = {}


def solution(x, weight_shard, grad_out, ranks_per_node):
    per_node = int(ranks_per_node)
    w, rank = dist.get_world_size(), dist.get_rank()
    key = (id(dist.group.WORLD), per_node)
    if key not in _GROUPS:
        _GROUPS[key] = [dist.new_group(list(range(n * per_node, (n + 1) * per_node))) for n in range(w // per_node)]
    node_group = _GROUPS[key][rank // per_node]
    out_features, in_features = grad_out.shape[1], x.shape[1]
    pieces = [torch.empty_like(weight_shard) for _ in range(per_node)]
    dist.all_gather(pieces, weight_shard.contiguous(), group=node_group)
    weight = torch.cat(pieces).view(out_features, in_features)
    y = torch.matmul(x, weight.t())
    grad = torch.matmul(grad_out.t(), x).reshape(-1) / w
    dist.all_reduce(grad)
    local = rank % per_node
    return y, grad[local * weight_shard.numel() : (local + 1) * weight_shard.numel()].clone()
