"""Adds the bias and the residual to this rank's own block of the float32 partial, so the reduce-scatter adds them
exactly once, then reduces in float32."""

import torch
import torch.distributed as dist


def solution(ctx, w_proj, bias, residual):
    r = dist.get_rank()
    s = residual.shape[0]
    partial = torch.matmul(ctx.float(), w_proj.float())
    partial[r * s : (r + 1) * s] += residual.float() + bias.float()
    out = torch.empty(residual.shape, dtype=torch.float32, device=ctx.device)
    dist.reduce_scatter_tensor(out, partial)
    return out.to(residual.dtype)
