"""Wrong: feeds Adam the sum of the ranks' gradients instead of their mean."""

import math

import torch
import torch.distributed as dist


def solution(grads, master, exp_avg, exp_avg_sq, step):
    grad = torch.empty_like(master)
    dist.reduce_scatter_tensor(grad, grads.float())
    t = int(step.item()) + 1
    p = master * (1 - 1e-3 * 0.1)
    m = exp_avg * 0.9 + 0.1 * grad
    v = exp_avg_sq * 0.95 + 0.05 * grad * grad
    p = p - (1e-3 / (1 - 0.9**t)) * m / (v.sqrt() / math.sqrt(1 - 0.95**t) + 1e-8)
    params = torch.empty_like(grads)
    dist.all_gather_into_tensor(params, p.to(grads.dtype))
    return params, p, m, v
