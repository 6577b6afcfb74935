"""Wrong: uses scale = absmax / 128 (the int8 range's other end) and clamps, so large values saturate."""

import torch
import torch.distributed as dist

BLOCK = 256


def solution(grad):
    world = dist.get_world_size()
    x = grad.float().view(-1, BLOCK)
    scale = x.abs().amax(dim=1, keepdim=True) / torch.tensor(128.0, device=grad.device)
    codes = torch.where(scale > 0, torch.round(x / scale), torch.zeros_like(x)).clamp(-127, 127)
    out = (codes * scale).view(-1)
    dist.all_reduce(out)
    return out / world
