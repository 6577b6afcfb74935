"""Wrong: scatter-gather with the slices re-assembled in reverse local-rank order."""

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
    nxt = (node + 1) % nodes * per_node + local
    prev = (node - 1) % nodes * per_node + local
    flat = act.reshape(act.shape[0], -1)
    chunk = flat.shape[1] // per_node
    rows = []
    for m in range(flat.shape[0]):
        piece = flat[m, local * chunk : (local + 1) * chunk].contiguous()
        got = torch.empty_like(piece)
        for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, piece, nxt), dist.P2POp(dist.irecv, got, prev)]):
            req.wait()
        parts = [torch.empty_like(got) for _ in range(per_node)]
        dist.all_gather(parts, got, group=_GROUPS[key][node])
        rows.append(torch.cat(parts[::-1]))
    return torch.stack(rows).view_as(act)
