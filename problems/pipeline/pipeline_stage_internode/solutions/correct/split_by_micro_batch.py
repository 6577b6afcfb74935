"""Split the work by micro-batch instead of by elements: local rank m % rpn carries micro-batch m whole across
the network, then broadcasts it inside the node."""

import torch
import torch.distributed as dist

_GROUPS = {}


def solution(act: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    w, rank = dist.get_world_size(), dist.get_rank()
    nodes = w // per_node
    key = (id(dist.group.WORLD), per_node)
    if key not in _GROUPS:
        _GROUPS[key] = [dist.new_group(list(range(n * per_node, (n + 1) * per_node))) for n in range(nodes)]
    if nodes == 1:
        return act.clone()
    node, local = divmod(rank, per_node)
    group = _GROUPS[key][node]
    nxt = (node + 1) % nodes * per_node + local
    prev = (node - 1) % nodes * per_node + local
    out = torch.empty_like(act)
    ops = []
    for m in range(act.shape[0]):
        if m % per_node == local:
            ops += [dist.P2POp(dist.isend, act[m].contiguous(), nxt), dist.P2POp(dist.irecv, out[m], prev)]
    for req in dist.batch_isend_irecv(ops) if ops else []:
        req.wait()
    for m in range(act.shape[0]):
        dist.broadcast(out[m], src=node * per_node + m % per_node, group=group)
    return out
