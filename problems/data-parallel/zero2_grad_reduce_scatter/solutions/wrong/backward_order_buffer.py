"""Wrong: packs the gradients in the order backward produces them (reverse parameter order), not parameter order."""

import torch
import torch.distributed as dist


def solution(*grads):
    world = dist.get_world_size()
    flat = torch.cat([g.float().reshape(-1) for g in reversed(grads)])
    pad = (-flat.numel()) % world
    flat = torch.nn.functional.pad(flat, (0, pad))
    out = torch.empty(flat.numel() // world, dtype=torch.float32, device=flat.device)
    dist.reduce_scatter_tensor(out, flat)
    return out / world
