"""All-reduce the whole gradient and all-gather the old parameters (independent, so they can overlap), then do the
step on the full vector locally: no reduction sits between the update and its output."""

import torch
import torch.distributed as dist


def solution(param_shard, grad, loss, covariance):
    w = dist.get_world_size()
    g = grad.float()
    dist.all_reduce(g)
    g.div_(w)
    x = torch.empty(w * param_shard.numel(), dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(x, param_shard.contiguous())
    losses = torch.empty(w, dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(losses, loss.reshape(1).contiguous())
    mean = losses.mean()
    r = torch.clamp(((losses - mean) ** 2).mean(), min=0.01)
    p_pred = covariance + 0.1
    norm2 = torch.dot(g, g)
    innovation = p_pred * norm2 + r
    return x - (p_pred * mean / innovation) * g, torch.stack([p_pred - p_pred ** 2 * norm2 / innovation, mean,
                                                              innovation])
