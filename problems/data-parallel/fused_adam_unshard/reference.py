"""FSDP2 optimizer step and unshard: every parameter is a DTensor sharded on dim 0 (torch.chunk rows, uneven at the
end, possibly empty); AdamW updates the local shards, and one packed all-gather rebuilds the full bit16 parameters."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randint, randn, shared_generator

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-3, 0.9, 0.999, 1e-8, 0.01


def adamw(param, grad, exp_avg, exp_avg_sq, step):
    """torch.optim.AdamW (decoupled weight decay) on new tensors; ``step`` is 1-based."""
    param = param * (1 - LR * WEIGHT_DECAY)
    exp_avg = exp_avg * BETA1 + (1 - BETA1) * grad
    exp_avg_sq = exp_avg_sq * BETA2 + (1 - BETA2) * grad * grad
    denom = exp_avg_sq.sqrt() / math.sqrt(1 - BETA2 ** step) + EPS
    return param - (LR / (1 - BETA1 ** step)) * exp_avg / denom, exp_avg, exp_avg_sq


def _shapes(layers: int, hidden: int, vocab: int) -> list[tuple[int, ...]]:
    h = hidden
    shapes = [(vocab, h)]
    for _ in range(layers):
        shapes += [(h,), (3 * h, h), (h, h), (h,), (4 * h, h), (h, 4 * h)]
    return shapes


def _rows(dim0: int, world: int, rank: int) -> tuple[int, int]:
    """torch.chunk's rows for one rank: ceil(dim0 / W) each, the last ones short or empty."""
    c = -(-dim0 // world)
    return min(rank * c, dim0), min((rank + 1) * c, dim0)


def solution(step, dim0, *state):
    world = dist.get_world_size()
    t = int(step.item()) + 1
    sizes = dim0.tolist()
    dt = state[1].dtype
    new = [adamw(state[i], state[i + 1].float(), state[i + 2], state[i + 3], t) for i in range(0, len(state), 4)]
    # Pack every parameter's shard, padded to ceil(dim0 / W) rows, into one all-gather input (FSDP2's layout).
    padded = []
    for (p, _, _), d in zip(new, sizes):
        c = -(-d // world)
        row = math.prod(p.shape[1:])
        buf = torch.zeros(c * row, dtype=dt, device=p.device)
        buf[: p.numel()] = p.reshape(-1)
        padded.append(buf)
    send = torch.cat(padded)
    recv = torch.empty(world * send.numel(), dtype=dt, device=send.device)
    dist.all_gather_into_tensor(recv, send)
    per_rank = recv.view(world, -1)
    full, offset = [], 0
    for (p, _, _), d, buf in zip(new, sizes, padded):
        rest = tuple(p.shape[1:])
        pieces = per_rank[:, offset:offset + buf.numel()].reshape((world, -1) + rest)
        full.append(pieces.reshape((-1,) + rest)[:d].clone())
        offset += buf.numel()
    return (*full, *(n[0] for n in new), *(n[1] for n in new), *(n[2] for n in new))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, hidden: int,
                vocab: int):
    shapes = _shapes(layers, hidden, vocab)
    sg = shared_generator(seed, device)
    step = randint(1, 50, (), device, sg)
    dim0 = torch.tensor([s[0] for s in shapes], dtype=torch.int64, device=device)
    g = rank_generator(seed, rank, device)
    state = []
    for shape in shapes:
        lo, hi = _rows(shape[0], world_size, rank)
        local = (hi - lo,) + shape[1:]
        state += [randn(local, torch.float32, device, g, scale=2e-2),       # fp32 parameter shard
                  randn(local, dtype_of(dtype), device, g, scale=1e-2),     # reduce-scattered gradient shard
                  randn(local, torch.float32, device, g, scale=3e-3),       # exp_avg
                  (torch.rand(local, generator=g, device=g.device) + 0.2).mul_(1e-4).to(device)]  # exp_avg_sq
    return (step, dim0, *state)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    t = int(inputs[0][0]) + 1
    dt = inputs[0][3].dtype
    count = (len(inputs[0]) - 2) // 4
    updated = [[adamw(*(inp[2 + 4 * i + k].double() for k in range(4)), t) for i in range(count)] for inp in inputs]
    full = [torch.cat([updated[r][i][0] for r in range(world)]).to(dt) for i in range(count)]
    return [(*(f.clone() for f in full), *(u[0].float() for u in updated[r]), *(u[1].float() for u in updated[r]),
             *(u[2].float() for u in updated[r])) for r in range(world)]
