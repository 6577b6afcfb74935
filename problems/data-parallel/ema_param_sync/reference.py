"""EMA teacher (DINOv2-style) on FSDP shards: each step the teacher shard moves towards the student shard with a
cosine-scheduled momentum; after every fourth step the full teacher is all-gathered, in the model dtype, for
evaluation."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randint, randn, shared_generator

BASE_MOMENTUM, TOTAL_STEPS, EVAL_EVERY = 0.996, 1000, 4


def momentum(k: int) -> float:
    """Cosine schedule from BASE_MOMENTUM at step 0 to 1 at TOTAL_STEPS (computed in float64)."""
    return 1 - (1 - BASE_MOMENTUM) * (math.cos(math.pi * k / TOTAL_STEPS) + 1) / 2


def solution(step, teacher, students, eval_dtype):
    world = dist.get_world_size()
    k0 = int(step.item())
    t = teacher.clone()
    snapshots = []
    for i in range(students.shape[0]):
        m = momentum(k0 + i)
        t.mul_(m).add_(students[i], alpha=1 - m)
        if (k0 + i + 1) % EVAL_EVERY == 0:
            full = torch.empty(world * t.numel(), dtype=eval_dtype.dtype, device=t.device)
            dist.all_gather_into_tensor(full, t.to(eval_dtype.dtype))
            snapshots.append(full)
    return t, torch.stack(snapshots)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int, steps: int):
    n = numel // world_size
    step = randint(0, TOTAL_STEPS // 2, (), device, shared_generator(seed, device))
    g = rank_generator(seed, rank, device)
    teacher = randn((n,), torch.float32, device, g, scale=2e-2)
    # The student drifts from the teacher step after step.
    drift = randn((steps, n), torch.float32, device, g, scale=1e-2).cumsum(0)
    students = teacher + 2e-2 * randn((n,), torch.float32, device, g) + drift
    # A 0-element tensor whose dtype is the model dtype, in which the evaluation copies are gathered.
    eval_dtype = torch.empty(0, dtype=dtype_of(dtype), device=device)
    return step, teacher, students, eval_dtype


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    k0 = int(inputs[0][0])
    dt = inputs[0][3].dtype
    t = torch.cat([inp[1].double() for inp in inputs])
    s = torch.cat([inp[2].double() for inp in inputs], dim=1)
    snapshots = []
    for i in range(s.shape[0]):
        m = momentum(k0 + i)
        t = m * t + (1 - m) * s[i]
        if (k0 + i + 1) % EVAL_EVERY == 0:
            snapshots.append(t.to(dt))
    shards = t.float().chunk(world)
    return [(shards[r].clone(), torch.stack(snapshots)) for r in range(world)]
