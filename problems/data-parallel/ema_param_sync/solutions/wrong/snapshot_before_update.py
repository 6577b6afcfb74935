"""Wrong: takes each evaluation snapshot before that step's EMA update instead of after it."""

import math

import torch
import torch.distributed as dist


def solution(step, teacher, students, eval_dtype):
    world = dist.get_world_size()
    k0 = int(step)
    t = teacher.clone()
    snaps = []
    for i in range(students.shape[0]):
        k = k0 + i
        m = 1 - (1 - 0.996) * (math.cos(math.pi * k / 1000) + 1) / 2
        if (k + 1) % 4 == 0:
            full = torch.empty(world * t.numel(), dtype=eval_dtype.dtype, device=t.device)
            dist.all_gather_into_tensor(full, t.to(eval_dtype.dtype))
            snaps.append(full)
        t = m * t + (1 - m) * students[i]
    return t, torch.stack(snaps)
