"""Upcasts the gradients and reduce-scatters them in fp32 (twice the link bytes of the reference, same answer)."""

import math

import torch
import torch.distributed as dist


def solution(grads, master, exp_avg, exp_avg_sq, step):
    world = dist.get_world_size()
    grad = torch.empty_like(master)
    dist.reduce_scatter_tensor(grad, grads.float())
    grad /= world
    t = int(step.item()) + 1
    p = master.clone().mul_(1 - 1e-3 * 0.1)
    m = exp_avg.clone().mul_(0.9).add_(grad, alpha=0.1)
    v = exp_avg_sq.clone().mul_(0.95).addcmul_(grad, grad, value=0.05)
    denom = (v.sqrt() / math.sqrt(1 - 0.95**t)).add_(1e-8)
    p.addcdiv_(m, denom, value=-1e-3 / (1 - 0.9**t))
    gathered = [torch.empty_like(master) for _ in range(world)]
    dist.all_gather(gathered, p)
    return torch.cat(gathered).to(grads.dtype), p, m, v
