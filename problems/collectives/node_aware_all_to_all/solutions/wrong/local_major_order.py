"""Wrong: two hops done right, but the received blocks are returned in (local index, node) order instead of
source-rank (node, local index) order."""

import torch
import torch.distributed as dist

_GROUPS = {}


def _groups(per_node: int):
    key = (id(dist.group.WORLD), per_node)
    if key not in _GROUPS:
        w = dist.get_world_size()
        nodes = w // per_node
        intra = [dist.new_group(list(range(n * per_node, (n + 1) * per_node))) for n in range(nodes)]
        inter = [dist.new_group(list(range(l, w, per_node))) for l in range(per_node)]
        _GROUPS[key] = (intra, inter)
    return _GROUPS[key]


def solution(x: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    w, rank = dist.get_world_size(), dist.get_rank()
    nodes = w // per_node
    rows, cols = x.shape[0] // w, x.shape[1]
    intra, inter = _groups(per_node)
    send = x.view(nodes, per_node, rows, cols).transpose(0, 1).contiguous()
    hop = torch.empty_like(send)
    dist.all_to_all_single(hop, send, group=intra[rank // per_node])
    send = hop.transpose(0, 1).contiguous()
    out = torch.empty_like(send)
    dist.all_to_all_single(out, send, group=inter[rank % per_node])
    return out.transpose(0, 1).reshape(w * rows, cols)
