"""Ulysses attention with GQA: q goes through the usual head all-to-all; k and v have Hkv heads, and when Hkv < W
each KV head is first repeated W/Hkv times so the all-to-all still gives every rank exactly the KV head its query
heads read. Causal attention over the whole sequence, then the output all-to-all back to sequence shards."""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, rank_generator

Q_SCALE = 4.0  # query scale: makes the softmax peaked, as trained attention is, so outputs are not near zero


def _seq_to_heads(x: torch.Tensor, w: int) -> torch.Tensor:
    """(S/W, n, D) sequence shard -> (n/W, S, D): all positions of this rank's head group."""
    s_local, n, d = x.shape
    send = x.reshape(s_local, w, n // w, d).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.reshape(w * s_local, n // w, d).transpose(0, 1)


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    s_local, heads, d = q.shape
    kv_heads = k.shape[1]
    rep = max(1, w // kv_heads)  # KV replication so the head count divides by W
    qh = _seq_to_heads(q, w)
    kh = _seq_to_heads(k.repeat_interleave(rep, dim=1), w)
    vh = _seq_to_heads(v.repeat_interleave(rep, dim=1), w)
    group = qh.shape[0] // kh.shape[0]  # local query heads per local KV head
    out = F.scaled_dot_product_attention(qh[None], kh.repeat_interleave(group, dim=0)[None],
                                         vh.repeat_interleave(group, dim=0)[None], is_causal=True)[0]
    send = out.reshape(heads // w, w, s_local, d).permute(1, 2, 0, 3).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.permute(1, 0, 2, 3).reshape(s_local, heads, d)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, kv_heads: int, head_dim: int):
    g = rank_generator(seed, rank, device)
    dt = dtype_of(dtype)
    s_local = seq // world_size
    q = randn((s_local, heads, head_dim), dt, device, g, scale=Q_SCALE)
    k = randn((s_local, kv_heads, head_dim), dt, device, g)
    v = randn((s_local, kv_heads, head_dim), dt, device, g)
    return q, k, v


def oracle(inputs: list[tuple], seq: int, heads: int, kv_heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    q, k, v = (torch.cat([inp[i] for inp in inputs]).to(torch.float64) for i in range(3))
    kv_of = torch.arange(heads) // (heads // kv_heads)  # query head h reads KV head h // (H / Hkv)
    k, v = k[:, kv_of], v[:, kv_of]
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim)
    pos = torch.arange(seq)
    scores = scores.masked_fill(pos[None, None, :] > pos[None, :, None], float("-inf"))
    out = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v).to(dt)
    return [out[r * seq // w:(r + 1) * seq // w].clone() for r in range(w)]
