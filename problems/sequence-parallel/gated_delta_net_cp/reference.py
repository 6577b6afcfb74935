"""Gated delta rule, sequence sharded. Per head, with the state M (D_k x D_v):

    M_t = exp(g_t) * (I - beta_t k_t k_t^T) M_{t-1} + beta_t k_t v_t^T,    o_t = M_t^T q_t

Over one shard the state map is affine, M_end = T M_start + B. Every rank computes its shard's (T, B) from chunked
(WY-style) forms in parallel, the pairs are all-gathered, rank r composes those of ranks 0..r-1 into its starting
state, and a second, cheap pass over the chunks produces the outputs."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, rank_generator, shared_generator

CHUNK = 64


def _chunk_terms(q, k, v, g, beta):
    """Per chunk (all chunks at once), fp32, (n, H, C, .) layout. With M0 the state entering the chunk:
    W = W0 - U @ M0 (the corrected values), out = gam * Q @ M0 + Aqk @ W, M_end = P @ M0 + Kd^T @ W0."""
    c = q.shape[-2]
    G = g.cumsum(-1)  # (n, H, C) log decay from the chunk start, inclusive
    gam = torch.exp(G)
    rel = G[..., :, None] - G[..., None, :]  # G_t - G_s
    lower = torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
    decay = torch.exp(rel.masked_fill(~lower, float("-inf")))  # exp(G_t - G_s) for s <= t, else 0
    a = (k @ k.transpose(-1, -2)) * decay * beta[..., None, :]
    a = a.tril(-1) + torch.eye(c, device=q.device)  # I + the strictly lower part
    rhs = torch.cat([v, gam[..., None] * k], dim=-1)
    sol = torch.linalg.solve_triangular(a, rhs, upper=False, unitriangular=True)
    w0, u = sol[..., :v.shape[-1]], sol[..., v.shape[-1]:]
    aqk = (q @ k.transpose(-1, -2)) * decay * beta[..., None, :]
    kd = k * (beta * torch.exp(G[..., -1:] - G))[..., None]  # keys weighted by beta and decay to the chunk end
    p = gam[..., -1, None, None] * torch.eye(k.shape[-1], device=q.device) - kd.transpose(-1, -2) @ u
    b = kd.transpose(-1, -2) @ w0
    return gam, w0, u, aqk, p, b


def solution(q, k, v, g, beta):
    w, r = dist.get_world_size(), dist.get_rank()
    n_tok, heads, d = q.shape
    c = CHUNK if n_tok % CHUNK == 0 else n_tok
    n = n_tok // c
    qc, kc, vc = (x.float().view(n, c, heads, d).transpose(1, 2) for x in (q, k, v))  # (n, H, C, D)
    gc, bc = (x.float().view(n, c, heads).transpose(1, 2) for x in (g, beta))  # (n, H, C)
    gam, w0, u, aqk, p, b = _chunk_terms(qc, kc, vc, gc, bc)
    # This shard's affine map, composed chunk by chunk.
    eye = torch.eye(d, device=q.device).expand(heads, d, d)
    t_map, b_map = eye.clone(), torch.zeros((heads, d, d), device=q.device)
    for j in range(n):
        t_map, b_map = p[j] @ t_map, p[j] @ b_map + b[j]
    every = torch.empty((w * 2, heads, d, d), dtype=torch.float32, device=q.device)
    dist.all_gather_into_tensor(every, torch.stack([t_map, b_map]))
    every = every.view(w, 2, heads, d, d)
    state = torch.zeros((heads, d, d), device=q.device)
    for j in range(r):
        state = every[j, 0] @ state + every[j, 1]
    out = torch.empty_like(qc)
    for j in range(n):
        wj = w0[j] - u[j] @ state
        out[j] = gam[j][..., None] * (qc[j] @ state) + aqk[j] @ wj
        state = p[j] @ state + b[j]
    return out.transpose(1, 2).reshape(n_tok, heads, d).to(q.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int):
    dt = dtype_of(dtype)
    n = seq // world_size
    g_ = rank_generator(seed, rank, device)
    # Queries and keys are L2-normalised per head, as the model's kernels do before the delta rule.
    q = F.normalize(randn((n, heads, head_dim), torch.float32, device, g_), dim=-1).to(dt)
    k = F.normalize(randn((n, heads, head_dim), torch.float32, device, g_), dim=-1).to(dt)
    v = randn((n, heads, head_dim), dt, device, g_)
    # Forget gates g = -rate_h * softplus(x): per-head rates from 1e-3 to 1e-1 shared by all ranks, so some heads
    # keep their state for thousands of tokens; write strengths beta = sigmoid(x).
    rate = torch.exp(torch.empty(heads, device=device).uniform_(-6.9, -2.3, generator=shared_generator(seed, device)))
    g = -rate * F.softplus(randn((n, heads), torch.float32, device, g_))
    beta = torch.sigmoid(randn((n, heads), torch.float32, device, g_))
    return q, k, v, g, beta


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    q, k, v, g, beta = (torch.cat([inp[i] for inp in inputs]).to(torch.float64) for i in range(5))
    state = torch.zeros((heads, head_dim, head_dim), dtype=torch.float64)
    eye = torch.eye(head_dim, dtype=torch.float64)
    out = torch.empty_like(v)
    for t in range(seq):
        kt, vt, bt = k[t], v[t], beta[t]
        proj = eye - bt[:, None, None] * kt[:, :, None] * kt[:, None, :]
        state = torch.exp(g[t])[:, None, None] * (proj @ state) + bt[:, None, None] * kt[:, :, None] * vt[:, None, :]
        out[t] = torch.einsum("hd,hde->he", q[t], state)
    out = out.to(dt)
    n = seq // w
    return [out[r * n:(r + 1) * n].clone() for r in range(w)]
