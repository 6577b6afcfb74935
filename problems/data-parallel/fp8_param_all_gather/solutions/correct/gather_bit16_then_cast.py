"""All-gathers the high-precision shards and casts each full weight locally (more link bytes, same codes)."""

import torch
import torch.distributed as dist


def solution(*shards):
    world = dist.get_world_size()
    full, amaxes = [], []
    for s in shards:
        parts = [torch.empty_like(s) for _ in range(world)]
        dist.all_gather(parts, s.contiguous())
        w = torch.cat(parts).float()
        full.append(w)
        amaxes.append(w.abs().max())
    amax = torch.stack(amaxes)
    scales = torch.full_like(amax, 448.0) / torch.maximum(amax, torch.full_like(amax, 1e-12))
    codes = [
        torch.clamp(w * scales[i], -448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8) for i, w in enumerate(full)
    ]
    return (*codes, scales)
