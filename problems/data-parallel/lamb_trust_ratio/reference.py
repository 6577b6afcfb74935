"""Distributed LAMB: every parameter tensor is flat-sharded over the ranks. Moments and the raw update are local,
but the trust ratio ||p|| / ||u|| of each tensor needs its norms over all shards: one all-reduce of every tensor's
two sums of squares."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randint, randn, shared_generator

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-2, 0.9, 0.999, 1e-6, 0.01


def lamb_update(param, grad, exp_avg, exp_avg_sq, step):
    """The moments and the raw LAMB update u (before the trust ratio), on new tensors; ``step`` is 1-based."""
    exp_avg = exp_avg * BETA1 + (1 - BETA1) * grad
    exp_avg_sq = exp_avg_sq * BETA2 + (1 - BETA2) * grad * grad
    m_hat = exp_avg / (1 - BETA1 ** step)
    v_hat = exp_avg_sq / (1 - BETA2 ** step)
    return m_hat / (v_hat.sqrt() + EPS) + WEIGHT_DECAY * param, exp_avg, exp_avg_sq


def trust_ratio(p_norm, u_norm):
    return torch.where((p_norm > 0) & (u_norm > 0), p_norm / u_norm, torch.ones_like(p_norm))


def solution(step, *state):
    t = int(step.item()) + 1
    params, grads = state[0::4], state[1::4]
    updates = [lamb_update(p, g.float(), m, v, t) for p, g, m, v in zip(params, grads, state[2::4], state[3::4])]
    sums = torch.stack([p.square().sum() for p in params] + [u.square().sum() for u, _, _ in updates])
    dist.all_reduce(sums)
    count = len(params)
    trust = trust_ratio(sums[:count].sqrt(), sums[count:].sqrt())
    new_params = [p - LR * trust[i] * u for i, (p, (u, _, _)) in enumerate(zip(params, updates))]
    return (*new_params, *(m for _, m, _ in updates), *(v for _, _, v in updates), trust)


def _sizes(layers: int, hidden: int) -> list[tuple[int, bool]]:
    """(numel, is_norm_weight) per tensor: qkv, proj, fc1, fc2 weights and two norm weights per layer."""
    h = hidden
    return [s for _ in range(layers) for s in ((3 * h * h, False), (h * h, False), (4 * h * h, False),
                                               (4 * h * h, False), (h, True), (h, True))]


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, hidden: int):
    sizes = _sizes(layers, hidden)
    sg = shared_generator(seed)
    step = randint(1, 50, (), device, sg)
    # Per-tensor parameter and gradient magnitudes differ, so the trust ratios differ.
    factors = torch.exp(0.5 * torch.randn((len(sizes), 2), generator=sg)).tolist()
    g = rank_generator(seed, rank, device)
    state = []
    for (numel, is_norm), (pf, gf) in zip(sizes, factors):
        n = numel // world_size
        if is_norm:
            param = 1 + randn((n,), torch.float32, device, g, scale=0.1 * pf)
        else:
            param = randn((n,), torch.float32, device, g, scale=2e-2 * pf)
        state += [param,
                  randn((n,), dtype_of(dtype), device, g, scale=1e-2 * gf),
                  randn((n,), torch.float32, device, g, scale=3e-3 * gf),
                  (torch.rand((n,), generator=g, device=g.device) + 0.2).mul_(1e-4 * gf * gf).to(device)]
    return (step, *state)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    t = int(inputs[0][0]) + 1
    count = (len(inputs[0]) - 1) // 4
    full = [[torch.cat([inp[1 + 4 * i + k].double() for inp in inputs]) for k in range(4)] for i in range(count)]
    outs = [[] for _ in range(world)]
    trust = []
    per_tensor = []
    for p, g, m, v in full:
        u, m2, v2 = lamb_update(p, g, m, v, t)
        tr = trust_ratio(p.norm(), u.norm())
        trust.append(tr)
        per_tensor.append(((p - LR * tr * u).chunk(world), m2.chunk(world), v2.chunk(world)))
    trust = torch.stack(trust).float()
    for r in range(world):
        outs[r] = (*(pt[0][r].float() for pt in per_tensor), *(pt[1][r].float() for pt in per_tensor),
                   *(pt[2][r].float() for pt in per_tensor), trust.clone())
    return outs
