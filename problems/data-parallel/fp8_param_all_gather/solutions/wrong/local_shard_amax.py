"""Wrong: scales each shard by its own amax instead of the amax of the whole weight (no all-reduce)."""

import torch
import torch.distributed as dist


def solution(*shards):
    world = dist.get_world_size()
    amax = torch.stack([s.abs().amax().float() for s in shards])
    scales = torch.full_like(amax, 448.0) / amax.clamp(min=1e-12)
    full = []
    for i, s in enumerate(shards):
        codes = (s.float() * scales[i]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
        out = torch.empty((world * s.shape[0],) + tuple(s.shape[1:]), dtype=torch.uint8, device=s.device)
        dist.all_gather_into_tensor(out, codes.contiguous())
        full.append(out)
    return (*full, scales)
