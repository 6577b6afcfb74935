"""MoE dispatch across nodes, as DeepEP's normal-mode internode dispatch does it.

Experts are sharded contiguously: rank r owns experts [r*L, (r+1)*L), L = experts / W; node m owns those of its
ranks. Hop 1 (network): a token is sent once to every node that owns one of its experts, to the rank there with the
sender's local index. Hop 2 (NVLink): that rank forwards it to every rank of its node that owns one of the token's
experts. A rank returns each token it received once, in (source rank, source token) order, with the token's top-k
ids rewritten to local expert indices (-1 where the expert lives elsewhere), its weights (0 there), and the number
of (token, expert) pairs per local expert."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, node_groups, node_layout, randn, skewed_router


def _exchange(group, counts: torch.Tensor, *tensors: torch.Tensor) -> list[torch.Tensor]:
    """Uneven all-to-all of several row-aligned tensors, ``counts[j]`` rows for the j-th rank of ``group``."""
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts, group=group)
    send, got = counts.tolist(), recv_counts.tolist()
    out = []
    for t in tensors:
        r = t.new_empty((sum(got),) + tuple(t.shape[1:]))
        dist.all_to_all_single(r, t.contiguous(), got, send, group=group)
        out.append(r)
    return out


def solution(x, topk_ids, topk_weights, experts, ranks_per_node):
    per_node = int(ranks_per_node)
    w, rank = dist.get_world_size(), dist.get_rank()
    nodes = w // per_node
    local_experts = int(experts) // w
    tokens = x.shape[0]
    intra, inter = node_groups(per_node)
    # Hop 1: one copy per (token, destination node), grouped by node, token order kept.
    node_hit = torch.zeros((nodes, tokens), dtype=torch.bool, device=x.device)
    node_hit.scatter_(0, (topk_ids // (local_experts * per_node)).t(), True)
    dst_node, tok = torch.nonzero(node_hit, as_tuple=True)
    meta = torch.cat([(rank * tokens + tok).unsqueeze(1), topk_ids[tok]], dim=1)  # source id, global expert ids
    rows, meta, weights = _exchange(inter, node_hit.sum(1), x[tok], meta, topk_weights[tok])
    # Hop 2: forward inside the node to each rank owning one of the token's experts.
    node = rank // per_node
    owner = meta[:, 1:] // local_experts - node * per_node  # local index of the owning rank, if on this node
    rank_hit = torch.zeros((per_node + 1, rows.shape[0]), dtype=torch.bool, device=x.device)
    rank_hit.scatter_(0, torch.where((owner >= 0) & (owner < per_node), owner, per_node).t(), True)
    rank_hit = rank_hit[:per_node]
    dst, idx = torch.nonzero(rank_hit, as_tuple=True)
    rows, meta, weights = _exchange(intra, rank_hit.sum(1), rows[idx], meta[idx], weights[idx])
    order = torch.argsort(meta[:, 0])
    rows, meta, weights = rows[order], meta[order], weights[order]
    local = meta[:, 1:] - rank * local_experts
    mine = (local >= 0) & (local < local_experts)
    local_ids = torch.where(mine, local, torch.full_like(local, -1))
    local_weights = torch.where(mine, weights, torch.zeros_like(weights))
    per_expert = torch.bincount(local[mine], minlength=local_experts)
    return rows, local_ids, local_weights, per_expert


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, hidden: int,
                topk: int, experts: int, ranks_per_node: int):
    node_layout(world_size, ranks_per_node)
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    weights = torch.softmax(top.values, dim=-1)  # float32 router weights of the chosen experts
    x = randn((tokens, hidden), dtype_of(dtype), device, g)
    return (x, top.indices, weights, torch.tensor(experts, dtype=torch.int64, device=device),
            torch.tensor(ranks_per_node, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    local_experts = int(inputs[0][3]) // w
    out = []
    for r in range(w):
        rows, ids, wts = [], [], []
        for x, topk_ids, topk_weights, _, _ in inputs:  # source ranks in order, tokens in order within each
            local = topk_ids - r * local_experts
            mine = (local >= 0) & (local < local_experts)
            keep = mine.any(dim=1)
            rows.append(x[keep])
            ids.append(torch.where(mine, local, -1)[keep])
            wts.append(torch.where(mine, topk_weights, 0.0)[keep])
        ids_r = torch.cat(ids)
        out.append((torch.cat(rows), ids_r, torch.cat(wts),
                    torch.bincount(ids_r[ids_r >= 0], minlength=local_experts)))
    return out
