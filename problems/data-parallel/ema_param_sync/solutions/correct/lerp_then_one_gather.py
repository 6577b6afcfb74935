"""Updates with lerp, keeps the two snapshot shards, and gathers both in one all-gather at the end."""

import math

import torch
import torch.distributed as dist


def solution(step, teacher, students, eval_dtype):
    world = dist.get_world_size()
    k0 = int(step)
    t = teacher.clone()
    kept = []
    for i in range(students.shape[0]):
        k = k0 + i
        m = 1 - (1 - 0.996) * (math.cos(math.pi * k / 1000) + 1) / 2
        t.lerp_(students[i], 1 - m)
        if (k + 1) % 4 == 0:
            kept.append(t.to(eval_dtype.dtype, copy=True))
    local = torch.stack(kept)  # [2, n]
    out = torch.empty((world,) + local.shape, dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(out.view(-1, local.shape[1]), local)
    return t, out.permute(1, 0, 2).reshape(local.shape[0], -1)
