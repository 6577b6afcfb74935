"""Kimi Delta Attention (KDA) across nodes: heads split over the GPUs of a node (tensor parallel, TP = ranks per
node), the sequence over the nodes (context parallel), then the row-parallel output projection. Per head, with the state S (K x V) and a decay per key channel:

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,    o_t = S_t^T q_t / sqrt(K)

Ranks r = c * TP + t: t indexes the head shard (the local rank), c the sequence shard (the node).
Over one shard the state map is affine, S_end = P S_start + B (FLA's KCP: each rank computes its shard's (P, B)
from chunked WY forms, the pairs are all-gathered over the context-parallel group and rank c folds those of shards
0..c-1 into its starting state: only these maps cross the network); a second pass over the chunks produces the
outputs, which are projected by this rank's columns of o_proj and summed over the node."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, node_groups, node_layout, randn, rank_generator, shared_generator

CHUNK = 128  # a chunk's log decay stays above -80 per channel, so exp(-G) fits float32


def _chunk_terms(q, k, v, g, beta):
    """All chunks at once, fp32, (n, H, C, .) layout. With S0 the state entering a chunk: the corrected values are
    w0 - U @ S0, the outputs qp @ S0 + Aqk @ (w0 - U @ S0) and the state leaving it P @ S0 + B."""
    c = q.shape[-2]
    G = g.cumsum(-2)  # (n, H, C, K): log decay from the chunk start, inclusive
    kp, km = k * torch.exp(G), k * torch.exp(-G)
    qp = q * torch.exp(G) / q.shape[-1] ** 0.5
    lower = torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
    a = (beta[..., :, None] * (kp @ km.transpose(-1, -2))).tril(-1) + torch.eye(c, device=q.device)
    sol = torch.linalg.solve_triangular(a, torch.cat([beta[..., None] * v, beta[..., None] * kp], dim=-1),
                                        upper=False, unitriangular=True)
    w0, u = sol[..., :v.shape[-1]], sol[..., v.shape[-1]:]
    aqk = (qp @ km.transpose(-1, -2)).masked_fill(lower.logical_not(), 0)
    kd = k * torch.exp(G[..., -1:, :] - G)  # keys decayed to the chunk end
    p = torch.diag_embed(torch.exp(G[..., -1, :])) - kd.transpose(-1, -2) @ u
    b = kd.transpose(-1, -2) @ w0
    return qp, w0, u, aqk, p, b


def solution(q, k, v, g, beta, wo, ranks_per_node):
    tp = int(ranks_per_node)
    tp_group, cp_group = node_groups(tp)
    cp, c_idx = dist.get_world_size() // tp, dist.get_rank() // tp
    n_tok, heads, dk = q.shape
    dv = v.shape[-1]
    c = CHUNK if n_tok % CHUNK == 0 else n_tok
    n = n_tok // c

    def chunked(x):
        return x.float().view(n, c, heads, -1).transpose(1, 2)  # (n, H, C, .)

    qp, w0, u, aqk, p, b = _chunk_terms(chunked(q), chunked(k), chunked(v), chunked(g),
                                        beta.float().view(n, c, heads).transpose(1, 2))
    t_map = torch.eye(dk, device=q.device).expand(heads, dk, dk).clone()
    b_map = torch.zeros((heads, dk, dv), device=q.device)
    for j in range(n):
        t_map, b_map = p[j] @ t_map, p[j] @ b_map + b[j]
    state = torch.zeros((heads, dk, dv), device=q.device)
    if cp > 1:
        mine = torch.cat([t_map, b_map], dim=-1).contiguous()  # (H, K, K + V)
        every = torch.empty((cp * heads,) + mine.shape[1:], dtype=mine.dtype, device=mine.device)
        dist.all_gather_into_tensor(every, mine, group=cp_group)
        every = every.view(cp, heads, dk, dk + dv)
        for j in range(c_idx):
            state = every[j, :, :, :dk] @ state + every[j, :, :, dk:]
    out = torch.empty((n, heads, c, dv), device=q.device)
    for j in range(n):
        wj = w0[j] - u[j] @ state
        out[j] = qp[j] @ state + aqk[j] @ wj
        state = p[j] @ state + b[j]
    # As vLLM's RowParallelLinear: the attention output in the model dtype, its partial projection all-reduced.
    y = out.transpose(1, 2).reshape(n_tok, heads * dv).to(q.dtype) @ wo.t()
    dist.all_reduce(y, group=tp_group)
    return y


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, heads: int, head_dim: int, hidden: int, ranks_per_node: int):
    nodes, tp = node_layout(world_size, ranks_per_node)
    dt = dtype_of(dtype)
    n, h = seq // nodes, heads // tp
    t = rank % tp
    g_ = rank_generator(seed, rank, device)
    # q and k are L2-normalised per head, as KDA's kernels do (use_qk_l2norm_in_kernel).
    q = F.normalize(randn((n, h, head_dim), torch.float32, device, g_), dim=-1).to(dt)
    k = F.normalize(randn((n, h, head_dim), torch.float32, device, g_), dim=-1).to(dt)
    v = randn((n, h, head_dim), dt, device, g_)
    # Per-channel log decays g = -rate * softplus(x), as KDA's gate -exp(A_log) * softplus(f(x) + dt_bias): rates
    # from 1e-3 to 0.2 per (head, channel), shared by the shards of one head, so some channels keep their state for
    # thousands of tokens and others forget within a chunk.
    shared = shared_generator(seed + 7919 * (t + 1), device)
    rate = torch.exp(torch.empty((h, head_dim), device=device).uniform_(-6.9, -1.6, generator=shared))
    g = -rate * F.softplus(randn((n, h, head_dim), torch.float32, device, g_))
    beta = torch.sigmoid(randn((n, h), torch.float32, device, g_))
    # This rank's columns of o_proj (hidden x heads * head_dim), the same on every node.
    wo = randn((hidden, h * head_dim), dt, device, shared, scale=heads ** -0.5)
    return q, k, v, g, beta, wo, torch.tensor(ranks_per_node, dtype=torch.int64, device=device)


def oracle(inputs: list[tuple], seq: int, heads: int, head_dim: int, hidden: int, ranks_per_node: int, **_):
    w = len(inputs)
    cp, tp = node_layout(w, ranks_per_node)
    dt = inputs[0][0].dtype

    def whole(i):  # (seq, heads, .) from the (cp, tp) pieces
        return torch.cat([torch.cat([inputs[c * tp + t][i] for t in range(tp)], dim=1) for c in range(cp)]).double()

    q, k, v, g, beta = (whole(i) for i in range(5))
    state = torch.zeros((heads, head_dim, head_dim), dtype=torch.float64)
    o = torch.empty((seq, heads, head_dim), dtype=torch.float64)
    for s in range(seq):
        state = torch.exp(g[s])[:, :, None] * state
        err = v[s] - torch.einsum("hd,hde->he", k[s], state)
        state = state + beta[s][:, None, None] * k[s][:, :, None] * err[:, None, :]
        o[s] = torch.einsum("hd,hde->he", q[s], state) / head_dim ** 0.5
    h = heads // tp
    n = seq // cp
    outs = []
    for r in range(w):
        c = r // tp
        rows = o[c * n:(c + 1) * n]
        y = sum(rows[:, t * h:(t + 1) * h].reshape(n, -1) @ inputs[c * tp + t][5].double().t() for t in range(tp))
        outs.append(y.to(dt))
    return outs
