"""Returns each rank's own partial weight and bias gradients: correct only for the tokens it holds."""

import torch


def solution(x, dy, gamma):
    xf, dyf = x.float(), dy.float()
    mean = xf.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt((xf - mean).square().mean(dim=-1, keepdim=True) + 1e-5)
    xhat = (xf - mean) * rstd
    g = dyf * gamma.float()
    dx = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xhat).sum(dim=0), dyf.sum(dim=0)
