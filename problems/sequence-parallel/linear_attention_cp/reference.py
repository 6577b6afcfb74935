"""Decayed causal linear attention, sequence sharded: o_t = sum_{s <= t} exp(lam_h * (t - s)) (q_t . k_s) v_s.

Each rank computes its shard's own decayed key-value state, the states are all-gathered, and rank r folds those of
ranks 0..r-1 (each decayed by the shards between) into the state its first token starts from. The local work is the
chunked form: exact attention-like products inside chunks, the running state between them."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator, shared_generator

CHUNK = 256


def _local(q, k, v, lam, state):
    """Chunked decayed linear attention of one shard, (L, H, D) fp32 in, starting from `state` (H, D, D).

    Returns the output and the shard's own end state (as if it had started from zero)."""
    n_tok, heads, d = q.shape
    c = CHUNK if n_tok % CHUNK == 0 else n_tok
    n = n_tok // c
    qc, kc, vc = (x.view(n, c, heads, d).permute(0, 2, 1, 3) for x in (q, k, v))  # (n, H, C, D)
    i = torch.arange(c, device=q.device, dtype=torch.float32)
    diff = i[:, None] - i[None, :]
    decay = torch.exp(lam[:, None, None] * diff.clamp(min=0)).masked_fill(diff < 0, 0.0)  # (H, C, C)
    out = ((qc @ kc.transpose(-1, -2)) * decay) @ vc
    to_end = torch.exp(lam[:, None] * (c - 1 - i))  # (H, C): decay from each position to the chunk's end
    chunk_states = (kc * to_end[..., None]).transpose(-1, -2) @ vc  # (n, H, D, D)
    from_start = torch.exp(lam[:, None] * (i + 1))  # decay from the previous chunk's end to each position
    whole = torch.exp(lam * c)[:, None, None]
    own = torch.zeros_like(state)
    for j in range(n):
        out[j] += (qc[j] * from_start[..., None]) @ state
        state = whole * state + chunk_states[j]
        own = whole * own + chunk_states[j]
    return out.permute(0, 2, 1, 3).reshape(n_tok, heads, d), own


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    n_tok, heads, d = q.shape
    lam = log_decay.float()
    qf, kf, vf = q.float(), k.float(), v.float()
    to_end = torch.exp(lam[None, :] * (n_tok - 1 - torch.arange(n_tok, device=q.device, dtype=torch.float32))[:, None])
    own = torch.einsum("thd,the->hde", kf * to_end[..., None], vf)  # this shard's decayed state
    states = torch.empty((w * heads, d, d), dtype=torch.float32, device=q.device)
    dist.all_gather_into_tensor(states, own.contiguous())
    states = states.view(w, heads, d, d)
    incoming = torch.zeros_like(own)
    for j in range(r):  # shard j's state decays over the r-1-j whole shards after it
        incoming += torch.exp(lam * n_tok * (r - 1 - j))[:, None, None] * states[j]
    out, _ = _local(qf, kf, vf, lam, incoming)
    return out.to(q.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    dt = dtype_of(dtype)
    shape = (seq // world_size, heads, head_dim)
    g = rank_generator(seed, rank, device)
    q = randn(shape, dt, device, g)
    k = randn(shape, dt, device, g, scale=head_dim ** -0.5)
    v = randn(shape, dt, device, g)
    # Per-head decay rates spread log-uniformly so the effective memory ranges from S/2 to S/64 tokens: most heads
    # carry state across several shards.
    u = torch.rand((heads,), generator=shared_generator(seed, device), device=device)
    log_decay = -torch.exp(math.log(1.0 / seq) + u * math.log(32.0))
    return q, k, v, log_decay.float()


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    q, k, v = (torch.cat([inp[i] for inp in inputs]).to(torch.float64) for i in range(3))
    lam = inputs[0][3].to(torch.float64)
    t = torch.arange(seq, dtype=torch.float64)
    diff = t[:, None] - t[None, :]
    weights = torch.exp(lam[:, None, None] * diff.clamp(min=0)) * (diff >= 0)  # (H, S, S)
    scores = torch.einsum("qhd,khd->hqk", q, k) * weights
    out = torch.einsum("hqk,khd->qhd", scores, v).to(dt)
    n = seq // w
    return [out[r * n:(r + 1) * n].clone() for r in range(w)]
