"""MoE combine: expert outputs go back to the ranks their tokens came from and are summed with router weights.

Experts are sharded contiguously (rank r owns experts [r*L, (r+1)*L), L = experts / W). Each rank's
expert_out rows are in dispatch order: sorted by (local expert, source rank, source token index)."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, peer_routing, randn, rank_generator, router_logits


def solution(expert_out: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, experts: torch.Tensor):
    experts = int(experts)
    w = dist.get_world_size()
    tokens, k = topk_ids.shape
    local = experts // w
    flat = topk_ids.reshape(-1)
    counts = torch.bincount(flat, minlength=experts)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)  # recv_counts[j*L + e]: rows of mine from source j, expert e
    # My rows are grouped (local expert, source); regroup them by source rank to send them home.
    expert = torch.arange(local, device=flat.device).repeat_interleave(w)
    src = torch.arange(w, device=flat.device).repeat(local)
    row_key = torch.repeat_interleave(src * local + expert, recv_counts.view(w, local).t().reshape(-1))
    send = expert_out.index_select(0, torch.argsort(row_key, stable=True))
    back = expert_out.new_empty((tokens * k, expert_out.shape[1]))
    dist.all_to_all_single(back, send, counts.view(w, local).sum(1).tolist(),
                           recv_counts.view(w, local).sum(1).tolist())
    # What comes back is in (global expert, token) order: the stable sort of my own routing.
    order = torch.argsort(flat, stable=True)
    weighted = back.float() * topk_weights.reshape(-1)[order, None].float()
    out = torch.zeros((tokens, expert_out.shape[1]), dtype=torch.float32, device=expert_out.device)
    out.index_add_(0, order // k, weighted)
    return out.to(expert_out.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int):
    topk_ids = peer_routing(seed, rank, device, tokens, experts, topk)
    # The router weights and expert outputs are this rank's alone, from its own stream. The weights are the softmax
    # of the top-k values of logits drawn like the routing's (so distributed as the router's weights, descending
    # along a row as topk_ids' logits do), not of the routing's own logits, which every rank rebuilds.
    g = rank_generator(seed, rank, device)
    topk_weights = torch.softmax(router_logits(seed, g, device, tokens, experts).topk(topk, dim=-1).values, dim=-1)
    # How many copies this rank's experts hold depends on every rank's routing, which is reproducible here.
    local = experts // world_size
    n = sum(int(((peer_routing(seed, j, device, tokens, experts, topk) // local) == rank).sum())
            for j in range(world_size))
    expert_out = randn((n, hidden), dtype_of(dtype), device, g)
    return (expert_out, topk_ids, topk_weights, torch.tensor(experts, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    tokens, k = inputs[0][1].shape
    dt = inputs[0][0].dtype
    device = inputs[0][0].device
    e = torch.cat([inp[1].reshape(-1) for inp in inputs])
    weight = torch.cat([inp[2].reshape(-1) for inp in inputs]).to(torch.float64)
    src = torch.arange(w, device=device).repeat_interleave(tokens * k)
    tok = torch.arange(tokens, device=device).repeat_interleave(k).repeat(w)
    # Sorting all copies by (expert, source, token) lines them up with the owners' buffers laid end to end.
    order = torch.argsort(e * (w * tokens) + src * tokens + tok)
    rows = torch.cat([inp[0] for inp in inputs]).to(torch.float64)
    out = torch.zeros((w * tokens, rows.shape[1]), dtype=torch.float64, device=device)
    out.index_add_(0, src[order] * tokens + tok[order], rows * weight[order, None])
    return [out[r * tokens:(r + 1) * tokens].to(dt) for r in range(w)]
