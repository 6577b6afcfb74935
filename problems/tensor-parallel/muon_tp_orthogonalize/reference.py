"""Muon's Newton-Schulz orthogonalization of a matrix whose columns are split across tensor-parallel ranks.

Rank r holds columns r*N/W ... (r+1)*N/W - 1 of the (M, N) update, M <= N. With X split by columns, the Gram matrix
X Xᵀ is the sum of the ranks' local Gram matrices, so each quintic step needs one all-reduce of an M x M matrix;
the rest (b A + c A², then a X + B X) is local to each rank's columns.
"""

import math

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

COEFFS = (3.4445, -4.7750, 2.0315)
STEPS = 5
EPS = 1e-7
RMS_SCALE = 0.2


def solution(g: torch.Tensor) -> torch.Tensor:
    a, b, c = COEFFS
    x = g.float()
    sq = x.square().sum().reshape(1)
    dist.all_reduce(sq)
    x = x / (sq.sqrt() + EPS)
    for _ in range(STEPS):
        gram = x @ x.T
        dist.all_reduce(gram)
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    m, n = g.shape[0], g.shape[1] * dist.get_world_size()
    return (x * (RMS_SCALE * math.sqrt(max(m, n)))).to(g.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, M: int, N: int):
    # Rows of different sizes (shared by every rank's columns) give the matrix a spread of singular values, as a
    # momentum buffer has; the columns are the rank's own.
    row_scale = randn((M, 1), torch.float32, device, shared_generator(seed, device), scale=0.5).exp()
    g = randn((M, N // world_size), torch.float32, device, rank_generator(seed, rank, device)) * row_scale
    return (g.to(dtype_of(dtype)),)


def oracle(inputs: list[tuple], M: int, N: int, **_):
    a, b, c = COEFFS
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    x = x / (torch.linalg.matrix_norm(x) + EPS)
    for _ in range(STEPS):
        gram = x @ x.T
        x = a * x + b * (gram @ x) + c * (gram @ (gram @ x))
    y = (x * RMS_SCALE * math.sqrt(max(M, N))).to(dt)
    return [block.clone() for block in y.chunk(len(inputs), dim=1)]
