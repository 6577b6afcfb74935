"""Rank 0 posts one send per block; every other rank posts one receive."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = x.shape[0] // world
    out = torch.empty((rows, x.shape[1]), dtype=x.dtype, device=x.device)
    if rank == 0:
        src = x.contiguous()
        out.copy_(src[:rows])
        ops = [dist.P2POp(dist.isend, src[p * rows : (p + 1) * rows], p) for p in range(1, world)]
    else:
        ops = [dist.P2POp(dist.irecv, out, 0)]
    for r in dist.batch_isend_irecv(ops):
        r.wait()
    return out
