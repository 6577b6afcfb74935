"""Megatron's fused QKV projection under tensor and sequence parallelism, with grouped-query attention.

Rank r holds tokens r*T/W ... (r+1)*T/W - 1 of the activations (sequence parallel) and the columns of the fused QKV
weight that belong to query groups r*G/W ... (r+1)*G/W - 1. Inside the shard the columns are grouped: for each local
group, its Hq/G query heads, then its key head, then its value head, D columns each. The activations are
all-gathered, multiplied by the shard, and the product is split into this rank's Q, K and V heads.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w_qkv: torch.Tensor, head_dim: torch.Tensor, q_per_group: torch.Tensor):
    world = dist.get_world_size()
    d, qg = int(head_dim), int(q_per_group)
    full = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, x.contiguous())
    mixed = (full @ w_qkv).view(full.shape[0], -1, qg + 2, d)
    q = mixed[:, :, :qg].reshape(full.shape[0], -1, d).contiguous()
    k = mixed[:, :, qg].contiguous()
    v = mixed[:, :, qg + 1].contiguous()
    return q, k, v


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                T: int, H: int, Hq: int, G: int, D: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((T // world_size, H), dt, device, g)
    # This rank's columns of the fused weight (its groups, Megatron's grouped column order), drawn from the rank's own
    # stream after x: no rank's shard follows from another's, so the assembled weight depends on W.
    cols = G // world_size * (Hq // G + 2) * D
    w_qkv = randn((H, cols), dt, device, g, scale=H ** -0.5)
    scalar = dict(dtype=torch.int64, device=device)
    return (x, w_qkv, torch.tensor(D, **scalar), torch.tensor(Hq // G, **scalar))


def oracle(inputs: list[tuple], T: int, H: int, Hq: int, G: int, D: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs], dim=0).to(acc)
    weight = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    qg = Hq // G
    # Column index of (group g, slot s, element e) is (g*(qg+2) + s)*D + e; pick the columns of each head kind.
    cols = torch.arange(G * (qg + 2) * D).view(G, qg + 2, D)
    y = x @ weight
    q_all = y[:, cols[:, :qg].reshape(-1)].view(T, Hq, D)
    k_all = y[:, cols[:, qg].reshape(-1)].view(T, G, D)
    v_all = y[:, cols[:, qg + 1].reshape(-1)].view(T, G, D)
    hq, hk = Hq // w, G // w
    return [(q_all[:, r * hq:(r + 1) * hq].to(dt).contiguous(), k_all[:, r * hk:(r + 1) * hk].to(dt).contiguous(),
             v_all[:, r * hk:(r + 1) * hk].to(dt).contiguous()) for r in range(w)]
