"""Wrong: exchanges halos around a ring, so the first and last ranks see each other's rows (periodic boundary)
instead of zero padding at the image's top and bottom."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight, bias):
    rank, world = dist.get_rank(), dist.get_world_size()
    up, down = (rank - 1) % world, (rank + 1) % world
    from_above = torch.empty_like(x[:, :, :1])
    from_below = torch.empty_like(x[:, :, :1])
    reqs = dist.batch_isend_irecv(
        [
            dist.P2POp(dist.isend, x[:, :, :1].contiguous(), up),
            dist.P2POp(dist.isend, x[:, :, -1:].contiguous(), down),
            dist.P2POp(dist.irecv, from_above, up),
            dist.P2POp(dist.irecv, from_below, down),
        ]
    )
    for r in reqs:
        r.wait()
    return F.conv2d(torch.cat([from_above, x, from_below], dim=2), weight, bias, padding=(0, 1))
