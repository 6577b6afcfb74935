"""Takes the gain's denominator from its own blocks only (no all-reduce): every block moves by the wrong amount."""

import torch
import torch.distributed as dist


def _owned(blocks, w, r):
    per, extra = divmod(blocks, w)
    start = r * per + min(r, extra)
    return start, start + per + (1 if r < extra else 0)


def solution(weights, grad, error, kalman_lambda, p_local):
    w, rank = dist.get_world_size(), dist.get_rank()
    block = p_local.shape[-1]
    blocks = weights.numel() // block
    start, end = _owned(blocks, w, rank)
    h = grad.view(blocks, block)[start:end]
    k = torch.bmm(p_local, h.unsqueeze(-1)).squeeze(-1)
    a = 1 / (kalman_lambda * (end - start) + (h * k).sum())
    delta = torch.zeros((blocks, block), dtype=weights.dtype, device=weights.device)
    delta[start:end] = (a * error) * k
    dist.all_reduce(delta)
    p_new = (p_local - a * k.unsqueeze(-1) * k.unsqueeze(-2)) / kalman_lambda
    return weights + delta.reshape(-1), p_new
