"""All-reduce through PyTorch symmetric memory: copy into a symmetric buffer, then one-shot all-reduce (every rank
reads every peer's buffer over NVLink and sums). Buffers are allocated and rendezvoused on the first call."""

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_buffers: dict = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    key = (x.numel(), x.dtype, x.device)
    buf = _buffers.get(key)
    if buf is None:
        buf = symm_mem.empty(x.numel(), dtype=x.dtype, device=x.device)
        symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
        _buffers[key] = buf
    buf.copy_(x)
    return torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", dist.group.WORLD.group_name)
