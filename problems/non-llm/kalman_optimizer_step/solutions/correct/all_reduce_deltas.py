"""Each rank writes its blocks' updates into a zero vector of all parameters and one all-reduce sums the deltas, the
gain's denominator travelling in the same buffer's last element."""

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
    h = grad.view(blocks, block)[start:end].double()
    p = p_local.double()
    k = (p @ h.unsqueeze(-1)).squeeze(-1)
    t = torch.stack([kalman_lambda.double() * (end - start) + (h * k).sum()])
    dist.all_reduce(t)
    a = 1 / t[0]
    delta = torch.zeros((blocks, block), dtype=torch.float64, device=weights.device)
    delta[start:end] = (a * error.double()) * k
    dist.all_reduce(delta)
    p_new = ((p - a * k.unsqueeze(-1) * k.unsqueeze(-2)) / kalman_lambda.double()).float()
    return (weights.double() + delta.reshape(-1)).float(), p_new
