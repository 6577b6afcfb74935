"""Every rank sends its shard to rank 0, which receives each straight into its slot of the output."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        out = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
        slots = out.chunk(world, dim=0)
        slots[0].copy_(x)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, slots[src], src) for src in range(1, world)])
    else:
        out = x.new_empty((0, x.shape[1]))
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x.contiguous(), 0)])
    for r in reqs:
        r.wait()
    return out
