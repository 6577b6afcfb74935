"""Gathers the token shards as a list, computes one fused gate/up GEMM with SwiGLU in float32, and replaces the
reduce-scatter by an all-to-all of the output blocks followed by a float32 sum."""

import torch
import torch.distributed as dist
import torch.nn.functional as F_


def solution(x, w_gate, w_up, w_down):
    w = dist.get_world_size()
    shards = [torch.empty_like(x) for _ in range(w)]
    dist.all_gather(shards, x.contiguous())
    full = torch.cat(shards, dim=0)
    gate, up = (full @ torch.cat([w_gate, w_up], dim=1)).float().chunk(2, dim=1)
    partial = ((F_.silu(gate) * up).to(x.dtype) @ w_down).float().contiguous()
    received = torch.empty_like(partial)
    dist.all_to_all_single(received, partial)
    return received.view(w, x.shape[0], -1).sum(dim=0).to(x.dtype)
