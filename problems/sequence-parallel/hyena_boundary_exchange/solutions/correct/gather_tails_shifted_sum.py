"""All-gathers every rank's last K-1 rows and takes the previous rank's as the halo; the convolution is K shifted,
scaled adds in float32 instead of conv1d."""

import torch
import torch.distributed as dist


def solution(x, weight):
    w, r = dist.get_world_size(), dist.get_rank()
    channels, kernel = weight.shape
    tails = torch.empty((w * (kernel - 1), channels), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(tails, x[-(kernel - 1) :].contiguous())
    halo = tails.view(w, kernel - 1, channels)[r - 1] if r > 0 else torch.zeros_like(x[: kernel - 1])
    ext = torch.cat([halo, x]).float()
    n = x.shape[0]
    y = torch.zeros((n, channels), dtype=torch.float32, device=x.device)
    for j in range(kernel):
        y += weight[:, j].float() * ext[j : j + n]
    return y.to(x.dtype)
