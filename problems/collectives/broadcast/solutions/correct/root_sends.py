"""The root sends its tensor to every other rank directly; fine for a few ranks on a switched fabric."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        out = x.clone(memory_format=torch.contiguous_format)
        ops = [dist.P2POp(dist.isend, out, peer) for peer in range(1, world)]
    else:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        ops = [dist.P2POp(dist.irecv, out, 0)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()
    return out
