"""Row-parallel GEMM whose all-reduce carries a fused epilogue, as TensorRT-LLM's attention output projection does:
the partial products are all-reduced, added to the residual stream (returned as the new residual) and
RMS-normalised for the next layer, all inside the all-reduce in TensorRT-LLM. Written here as separate steps."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-5


def solution(x: torch.Tensor, w: torch.Tensor, residual: torch.Tensor, norm_weight: torch.Tensor):
    partial = torch.nn.functional.linear(x, w)
    dist.all_reduce(partial)
    residual_out = (residual.float() + partial.float()).to(residual.dtype)
    h = residual_out.float()
    normed = (h * torch.rsqrt(h.square().mean(dim=-1, keepdim=True) + EPS) * norm_weight.float()).to(residual.dtype)
    return normed, residual_out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, M: int, K: int, N: int):
    dt = dtype_of(dtype)
    shared = shared_generator(seed, device)
    # Residual rows of different sizes, so the norm's per-row scale matters.
    row_scale = randn((M, 1), torch.float32, device, shared, scale=0.5).exp()
    residual = (randn((M, N), torch.float32, device, shared) * row_scale).to(dt)
    norm_weight = (1.0 + randn((N,), torch.float32, device, shared, scale=0.1)).to(dt)
    g = rank_generator(seed, rank, device)
    x = randn((M, K // world_size), dt, device, g)
    # Scaled by the full K, so the reduced product is O(1), like the residual.
    w = randn((N, K // world_size), dt, device, g, scale=K ** -0.5)
    return (x, w, residual, norm_weight)


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    w = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    h = inputs[0][2].to(acc) + x @ w.T
    normed = h / torch.sqrt(h.square().mean(dim=-1, keepdim=True) + EPS) * inputs[0][3].to(acc)
    return [(normed.to(dt), h.to(dt)) for _ in inputs]
