"""Wrong: applies weight decay as L2 added to the gradient (torch.optim.Adam), not decoupled as AdamW does."""

import math

import torch
import torch.distributed as dist


def solution(step, dim0, *state):
    world = dist.get_world_size()
    t = int(step) + 1
    new = []
    for i in range(0, len(state), 4):
        p, g, m, v = state[i], state[i + 1].float(), state[i + 2], state[i + 3]
        g = g + 0.01 * p
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - (1e-3 / (1 - 0.9**t)) * m / (v.sqrt() / math.sqrt(1 - 0.999**t) + 1e-8)
        new.append((p, m, v))
    full = []
    dt = state[1].dtype
    for (p, _, _), d in zip(new, dim0.tolist()):
        c = -(-d // world)
        padded = torch.zeros((c,) + tuple(p.shape[1:]), dtype=dt, device=p.device)
        padded[: p.shape[0]] = p
        parts = [torch.empty_like(padded) for _ in range(world)]
        dist.all_gather(parts, padded)
        full.append(torch.cat(parts)[:d])
    return (*full, *(n[0] for n in new), *(n[1] for n in new), *(n[2] for n in new))
