"""Wrong: a ring exchange (send to (r + 1) % W, receive from (r - 1) % W) whose halo is used on every rank, so rank 0
convolves the last rank's tail instead of zeros."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight):
    w, r = dist.get_world_size(), dist.get_rank()
    channels, kernel = weight.shape
    halo = torch.empty((kernel - 1, channels), dtype=x.dtype, device=x.device)
    reqs = dist.batch_isend_irecv(
        [
            dist.P2POp(dist.isend, x[-(kernel - 1) :].contiguous(), (r + 1) % w),
            dist.P2POp(dist.irecv, halo, (r - 1) % w),
        ]
    )
    for req in reqs:
        req.wait()
    y = F.conv1d(torch.cat([halo, x]).t()[None], weight[:, None, :], groups=channels)
    return y[0].t().contiguous()
