"""The weight and bias gradients reduced as a reduce-scatter of the partial sums and an all-gather of the result
(the all-reduce's two halves), with the input gradient computed while nothing waits on it."""

import torch
import torch.distributed as dist


def solution(x, dy, gamma):
    w = dist.get_world_size()
    xf, dyf = x.float(), dy.float()
    mean = xf.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt((xf - mean).square().mean(dim=-1, keepdim=True) + 1e-5)
    xhat = (xf - mean) * rstd
    partial = torch.cat([(dyf * xhat).sum(dim=0), dyf.sum(dim=0)])
    pad = (-partial.numel()) % w
    partial = torch.nn.functional.pad(partial, (0, pad))
    share = torch.empty(partial.numel() // w, dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(share, partial)
    g = dyf * gamma.float()
    dx = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
    full = torch.empty_like(partial)
    dist.all_gather_into_tensor(full, share)
    h = x.shape[-1]
    return dx.to(x.dtype), full[:h].clone(), full[h : 2 * h].clone()
