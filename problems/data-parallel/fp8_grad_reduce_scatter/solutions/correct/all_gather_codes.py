"""All-gathers every rank's codes and scales and dequantises only the owned chunk (more link bytes)."""

import torch
import torch.distributed as dist


def solution(grad, main_grad):
    world, rank = dist.get_world_size(), dist.get_rank()
    x = grad.float().view(-1, 128)
    amax = x.abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / torch.full_like(amax, 448.0), torch.ones_like(amax))
    codes = (x / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    all_codes = torch.empty((world,) + codes.shape, dtype=torch.uint8, device=codes.device)
    all_scales = torch.empty((world,) + scale.shape, dtype=scale.dtype, device=scale.device)
    dist.all_gather_into_tensor(all_codes.view(-1, 128), codes.contiguous())
    dist.all_gather_into_tensor(all_scales.view(-1, 1), scale.contiguous())
    per = codes.shape[0] // world
    mine = slice(rank * per, (rank + 1) * per)
    vals = all_codes[:, mine].view(torch.float8_e4m3fn).float() * all_scales[:, mine]
    acc = torch.zeros_like(vals[0])
    for q in range(world):
        acc += vals[q]
    return main_grad + (acc / world).view(-1)
