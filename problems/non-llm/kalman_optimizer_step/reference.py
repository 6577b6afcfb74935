"""One step of the layer-wise extended Kalman filter optimizer (LKF) with its covariance blocks spread over ranks, as
DeePMD-kit's PyTorch backend distributes it.

The flat parameters (n = blocks * block elements, the same on every rank, as after a data-parallel backward) are
cut into `blocks` blocks of `block` elements; block b has its own covariance P_b (block x block). The blocks are
dealt out contiguously: rank r owns blocks [start_r, end_r), the first `blocks % W` ranks one more than the others,
and holds only their P. With H the (already averaged) gradient and e the (already averaged) error:

    t  = sum over ALL blocks b of (lambda + H_b^T P_b H_b)      (lambda is added once per block, as the source does)
    A  = 1 / t
    K_b = P_b H_b
    w_b <- w_b + A * e * K_b
    P_b <- (P_b - A * K_b K_b^T) / lambda

Each rank returns the full updated parameters (every block) and its own updated P blocks. (The source then moves
lambda toward 1, lambda <- nue * lambda + 1 - nue: a scalar every rank computes alone, left out here.)"""

import torch
import torch.distributed as dist

from problems.common import randn, rank_generator, shared_generator

def owned_blocks(blocks: int, world_size: int, rank: int) -> tuple[int, int]:
    """[start, end) of the blocks rank ``rank`` owns: contiguous, the first ``blocks % W`` ranks one more."""
    per, extra = divmod(blocks, world_size)
    start = rank * per + min(rank, extra)
    return start, start + per + (1 if rank < extra else 0)


def solution(weights, grad, error, kalman_lambda, p_local):
    w, rank = dist.get_world_size(), dist.get_rank()
    block = p_local.shape[-1]
    blocks = weights.numel() // block
    start, end = owned_blocks(blocks, w, rank)
    h = grad.view(blocks, block)[start:end]
    k = torch.bmm(p_local, h.unsqueeze(-1)).squeeze(-1)  # K_b = P_b H_b for the owned blocks
    t = (kalman_lambda * (end - start) + (h * k).sum()).reshape(1)
    dist.all_reduce(t)  # the gain's denominator sums over every rank's blocks
    a = 1 / t
    mine = weights.view(blocks, block)[start:end] + (a * error) * k
    p_new = (p_local - a * k.unsqueeze(-1) * k.unsqueeze(-2)) / kalman_lambda
    # The updated blocks are all-gathered, each rank's padded to the largest share.
    most = -(-blocks // w)
    padded = torch.zeros((most, block), dtype=weights.dtype, device=weights.device)
    padded[:end - start] = mine
    gathered = torch.empty((w * most, block), dtype=weights.dtype, device=weights.device)
    dist.all_gather_into_tensor(gathered, padded)
    parts = []
    for j in range(w):
        s, e = owned_blocks(blocks, w, j)
        parts.append(gathered[j * most:j * most + (e - s)])
    return torch.cat(parts).reshape(-1), p_new


def _covariance(g: torch.Generator, block: int, device: torch.device) -> torch.Tensor:
    """A covariance block: symmetric positive definite, I + M M^T / block, drawn from its owner's stream ``g``."""
    m = randn((block, block), torch.float32, device, g)
    return torch.eye(block, device=device) + m @ m.t() / block


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, block: int, blocks: int):
    sg = shared_generator(seed, device)
    n = block * blocks
    weights = randn((n,), torch.float32, device, sg, scale=0.1)
    # The averaged gradient, scaled so that H_b^T P_b H_b is about 10 per block against lambda's 1: the step shrinks
    # P along H by a visible amount (a rank-one term far above the tolerance, so skipping it fails).
    grad = randn((n,), torch.float32, device, sg, scale=(5 / block) ** 0.5)
    # An error of magnitude 0.5 to 1.5 and either sign, so the parameters' update is never lost in the tolerance.
    u = torch.rand((2,), generator=sg, device=sg.device)
    error = ((0.5 + u[0]) * torch.where(u[1] < 0.5, -1.0, 1.0)).to(device)
    kalman_lambda = 0.98 + 0.02 * torch.rand((), generator=sg, device=sg.device).to(device)
    start, end = owned_blocks(blocks, world_size, rank)
    # Only the owner holds a block's P: drawn from the owner's own stream, block after block.
    g = rank_generator(seed, rank, device)
    p_local = torch.stack([_covariance(g, block, device) for _ in range(start, end)]) if end > start else (
        torch.zeros((0, block, block), device=device))
    return weights, grad, error, kalman_lambda.float(), p_local


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    weights, grad, error, lam = (inputs[0][i].double() for i in range(4))
    p = torch.cat([inp[4].double() for inp in inputs])
    blocks, block = p.shape[0], p.shape[-1]
    h = grad.view(blocks, block)
    k = torch.bmm(p, h.unsqueeze(-1)).squeeze(-1)
    a = 1 / (lam * blocks + (h * k).sum())
    new_weights = (weights.view(blocks, block) + a * error * k).reshape(-1).float()
    p_new = ((p - a * k.unsqueeze(-1) * k.unsqueeze(-2)) / lam).float()
    out = []
    for r in range(w):
        s, e = owned_blocks(blocks, w, r)
        out.append((new_weights.clone(), p_new[s:e].clone()))
    return out
