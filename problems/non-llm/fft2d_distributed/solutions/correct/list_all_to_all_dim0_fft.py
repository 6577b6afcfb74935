"""Uses the list form of all_to_all on float32 pairs, runs the column FFT along dim 0, and transposes last."""

import torch
import torch.distributed as dist


def solution(x):
    world = dist.get_world_size()
    cols = x.shape[1]
    z = torch.fft.fft(torch.complex(x[..., 0], x[..., 1]), dim=1) / cols**0.5
    width = cols // world
    send = [torch.view_as_real(z[:, d * width : (d + 1) * width].contiguous()) for d in range(world)]
    recv = [torch.empty_like(s) for s in send]
    dist.all_to_all(recv, send)
    slab = torch.view_as_complex(torch.cat(recv, dim=0))
    y = torch.fft.fft(slab, dim=0) / slab.shape[0] ** 0.5
    return torch.view_as_real(y.t().contiguous()).contiguous()
