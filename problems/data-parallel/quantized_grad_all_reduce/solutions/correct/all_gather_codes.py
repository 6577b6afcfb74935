"""All-gathers every rank's int8 codes and scales (cheaper on the link than all-to-all + all-gather for W <= 4)
and dequantises all of them locally."""

import torch
import torch.distributed as dist

BLOCK = 256


def solution(grad):
    world = dist.get_world_size()
    x = grad.float().view(-1, BLOCK)
    absmax = x.abs().amax(dim=1)
    scale = torch.div(absmax, torch.tensor(127.0, device=grad.device))
    safe = torch.where(absmax > 0, scale, torch.ones_like(scale))
    codes = torch.round(x / safe[:, None]).clamp(-127, 127).to(torch.int8)
    all_codes = torch.empty((world * codes.shape[0], BLOCK), dtype=torch.int8, device=grad.device)
    all_scales = torch.empty(world * scale.numel(), dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(all_codes, codes)
    dist.all_gather_into_tensor(all_scales, scale)
    all_codes, all_scales = all_codes.view(world, *codes.shape), all_scales.view(world, -1)
    total = torch.zeros_like(x)
    for r in range(world):
        total += all_codes[r].float() * all_scales[r][:, None]
    return (total / world).view(-1)
