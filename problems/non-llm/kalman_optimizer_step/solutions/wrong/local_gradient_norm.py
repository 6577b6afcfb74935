"""Wrong: uses the squared norm of this rank's shard of the averaged gradient instead of the global one."""

import torch
import torch.distributed as dist


def solution(param_shard, grad, loss, covariance):
    w = dist.get_world_size()
    s = param_shard.numel()
    g = torch.empty(s, dtype=torch.float32, device=grad.device)
    dist.reduce_scatter_tensor(g, grad.float())
    g.div_(w)
    stats = torch.stack([loss, loss * loss])
    dist.all_reduce(stats)
    mean = stats[0] / w
    r = torch.clamp(stats[1] / w - mean * mean, min=0.01)
    p_pred = covariance + 0.1
    norm2 = g.pow(2).sum()
    innovation = p_pred * norm2 + r
    params = torch.empty(w * s, dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(params, param_shard - (p_pred / innovation * mean) * g)
    return params, torch.stack([p_pred - p_pred * p_pred * norm2 / innovation, mean, innovation])
