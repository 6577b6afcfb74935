"""Low-latency MoE combine (decode): the inverse of the padded low-latency dispatch.

Rank r holds the outputs of its L = experts / W local experts in padded buffers: for local expert e, rows
[0, recv_count[e]) belong to source tokens recv_src[e, i] = source_rank * tokens + token (sorted ascending), the
rest is padding (garbage). Every token gets back its topk expert rows, weighted by its router weights."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, peer_routing, randn, rank_generator, router_logits


def solution(expert_out, recv_src, recv_count, topk_ids, topk_weights):
    w, r = dist.get_world_size(), dist.get_rank()
    local = expert_out.shape[0]
    tokens, k = topk_ids.shape
    hidden = expert_out.shape[2]
    e_idx, slot = (recv_src >= 0).nonzero(as_tuple=True)
    src = recv_src[e_idx, slot]
    # Send rows home ordered (source rank, global expert, token): the order the source's stable sort of its own
    # routing produces, so it can weight them without any metadata.
    key = (src // tokens) * (local * tokens) + e_idx * tokens + src % tokens
    order = torch.argsort(key)
    send = expert_out[e_idx[order], slot[order]]
    send_counts = torch.bincount(src // tokens, minlength=w)
    flat = topk_ids.reshape(-1)
    recv_counts = torch.bincount(flat // local, minlength=w)
    back = expert_out.new_empty((tokens * k, hidden))
    dist.all_to_all_single(back, send, recv_counts.tolist(), send_counts.tolist())
    mine = torch.argsort(flat, stable=True)
    out = torch.zeros((tokens, hidden), dtype=torch.float32, device=expert_out.device)
    out.index_add_(0, mine // k, back.float() * topk_weights.reshape(-1)[mine, None])
    return out.to(expert_out.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int):
    local = experts // world_size
    topk_ids = peer_routing(seed, rank, device, tokens, experts, topk)
    # The router weights and expert outputs are this rank's alone, from its own stream. The weights are the softmax
    # of the top-k values of logits drawn like the routing's (so distributed as the router's weights, descending
    # along a row as topk_ids' logits do), not of the routing's own logits, which every rank rebuilds.
    g = rank_generator(seed, rank, device)
    topk_weights = torch.softmax(router_logits(seed, g, device, tokens, experts).topk(topk, dim=-1).values, dim=-1)
    # The padded layout on this rank depends on every rank's routing, which is reproducible from the seed.
    all_ids = torch.cat([topk_ids if j == rank else peer_routing(seed, j, device, tokens, experts, topk)
                         for j in range(world_size)])  # row s*tokens + t
    recv_src = torch.full((local, world_size * tokens), -1, dtype=torch.int64, device=device)
    recv_count = torch.zeros(local, dtype=torch.int64, device=device)
    for e in range(local):
        rows = (all_ids == rank * local + e).any(dim=1).nonzero().flatten()
        recv_src[e, :rows.numel()] = rows
        recv_count[e] = rows.numel()
    # Padding rows hold whatever the expert GEMM left there: random values, not zeros.
    expert_out = randn((local, world_size * tokens, hidden), dtype_of(dtype), device, g)
    return (expert_out, recv_src, recv_count, topk_ids, topk_weights)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    local = inputs[0][0].shape[0]
    tokens, hidden = inputs[0][3].shape[0], inputs[0][0].shape[2]
    outs = []
    for s, (_, _, _, ids, wts) in enumerate(inputs):
        out = torch.zeros((tokens, hidden), dtype=torch.float64)
        for t in range(tokens):
            for slot in range(ids.shape[1]):
                e = int(ids[t, slot])
                buf, src = inputs[e // local][0], inputs[e // local][1]
                i = int((src[e % local] == s * tokens + t).nonzero()[0, 0])
                out[t] += float(wts[t, slot]) * buf[e % local, i].double()
        outs.append(out.to(device=inputs[0][0].device, dtype=inputs[0][0].dtype))
    return outs
