"""Upcasts the packed buffer to fp32 and uses one reduce-scatter (twice the link bytes, same answer)."""

import torch
import torch.distributed as dist


def solution(*grads):
    world = dist.get_world_size()
    flat = torch.cat([g.float().reshape(-1) for g in grads])
    pad = (-flat.numel()) % world
    flat = torch.nn.functional.pad(flat, (0, pad))
    out = torch.empty(flat.numel() // world, dtype=torch.float32, device=flat.device)
    dist.reduce_scatter_tensor(out, flat)
    return out / world
