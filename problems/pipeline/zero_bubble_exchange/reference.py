"""The split backward of a zero-bubble V-shaped pipeline (ZB-V): B (input gradients) sent, W (weight gradients) kept.

With W ranks and two chunks per rank, chunk 0 of rank r is stage r and chunk 1 is stage 2W-1-r: the model runs down
the ranks and back up, turning round on rank W-1. Each stage is a linear layer y = x @ w. B computes the gradient
with respect to the stage input, dx = dy @ wᵀ, which the previous stage needs next; W computes dw = xᵀ @ dy, which
nobody else needs, so it is deferred and overlaps the transfer.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
    world, r = dist.get_world_size(), dist.get_rank()
    dx = torch.matmul(dy, w.mT)  # B for both chunks
    dy_next = torch.zeros_like(dy)
    ops = []
    # Chunk 0 (stage r): its dx goes to stage r-1 (rank r-1, chunk 0); stage 0's goes to the embedding instead.
    if r > 0:
        ops.append(dist.P2POp(dist.isend, dx[0].contiguous(), r - 1))
    if r < world - 1:
        ops.append(dist.P2POp(dist.irecv, dy_next[0], r + 1))
    else:
        dy_next[0] = dx[1]  # the turn of the V: stage W-1 is fed by stage W on the same rank
    # Chunk 1 (stage 2W-1-r): its dx goes to stage 2W-2-r (rank r+1, chunk 1), or stays local on rank W-1 (above).
    if r < world - 1:
        ops.append(dist.P2POp(dist.isend, dx[1].contiguous(), r + 1))
    if r > 0:
        ops.append(dist.P2POp(dist.irecv, dy_next[1], r - 1))
    reqs = dist.batch_isend_irecv(ops) if ops else []
    dw = torch.matmul(x.mT, dy).float()  # W, while the gradients travel
    for req in reqs:
        req.wait()
    return dy_next, dw


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((2, T, H), dt, device, g)
    w = randn((2, H, H), dt, device, g, scale=H ** -0.5)
    dy = randn((2, T, H), dt, device, g)
    return (x, w, dy)


def oracle(inputs: list[tuple], T: int, H: int, **_):
    world = len(inputs)
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    # Stage s lives on (rank s, chunk 0) for s < W and on (rank 2W-1-s, chunk 1) otherwise.
    where = [(s, 0) if s < world else (2 * world - 1 - s, 1) for s in range(2 * world)]
    dx = {}
    for s, (r, c) in enumerate(where):
        x, w, dy = inputs[r]
        dx[s] = dy[c].to(acc) @ w[c].to(acc).T
    out = []
    for r in range(world):
        x, w, dy = inputs[r]
        stages = (r, 2 * world - 1 - r)
        dy_next = torch.stack([dx[s + 1] if s + 1 < 2 * world else torch.zeros(T, H, dtype=acc) for s in stages])
        dw = torch.stack([x[c].to(acc).T @ dy[c].to(acc) for c in range(2)])
        out.append((dy_next.to(dt), dw.float()))
    return out
