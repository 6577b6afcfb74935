"""LayerNorm backward under sequence parallelism (Megatron-LM with sequence_parallel=True): each tensor-parallel rank
holds its slice of the tokens and a replicated LayerNorm weight; the input gradient is local, but the weight and bias
gradients are sums over every token, so each rank's partial sums are all-reduced over the tensor-parallel group."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-5


def _backward(x: torch.Tensor, dy: torch.Tensor, gamma: torch.Tensor):
    """(dx, partial dgamma, partial dbeta) in x's float type, for rows of x normalised over the last dim."""
    mean = x.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt((x - mean).square().mean(dim=-1, keepdim=True) + EPS)
    xhat = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
    return dx, (dy * xhat).sum(dim=0), dy.sum(dim=0)


def solution(x: torch.Tensor, dy: torch.Tensor, gamma: torch.Tensor):
    dx, dgamma, dbeta = _backward(x.float(), dy.float(), gamma.float())
    grads = torch.stack([dgamma, dbeta])
    dist.all_reduce(grads)  # the weight's and bias's gradients sum over every rank's tokens
    return dx.to(x.dtype), grads[0].clone(), grads[1].clone()  # separate tensors, not views of one buffer


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, hidden: int):
    dt = dtype_of(dtype)
    gamma = (1.0 + randn((hidden,), torch.float32, device, shared_generator(seed, device), scale=0.1)).to(dt)
    g = rank_generator(seed, rank, device)
    rows = tokens // world_size
    # Rows with different offsets and scales, as activations have, so the normalisation matters.
    x = (randn((rows, hidden), torch.float32, device, g) * randn((rows, 1), torch.float32, device, g).exp()
         + randn((rows, 1), torch.float32, device, g)).to(dt)
    dy = randn((rows, hidden), dt, device, g)
    return x, dy, gamma


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    gamma = inputs[0][2].to(acc)
    parts = [_backward(x.to(acc), dy.to(acc), gamma) for x, dy, _ in inputs]
    dgamma = sum(p[1] for p in parts).float()
    dbeta = sum(p[2] for p in parts).float()
    return [(p[0].to(dt), dgamma.clone(), dbeta.clone()) for p in parts]
