"""Wide-EP dispatch without duplicates: a token is sent once to each rank that owns any of its top-k experts, with
its top-k list rewritten in that rank's local expert numbering (-1, weight 0 where the expert lives elsewhere).

Experts are sharded contiguously: rank r owns experts [r*L, (r+1)*L), L = experts / W."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, skewed_router


def solution(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, experts: torch.Tensor):
    w = dist.get_world_size()
    local = int(experts) // w
    owner = topk_ids // local  # (tokens, topk)
    xs, ids, wts, counts = [], [], [], []
    for j in range(w):
        here = owner == j
        rows = here.any(dim=1).nonzero().flatten()  # ascending token order
        h = here[rows]
        xs.append(x.index_select(0, rows))
        ids.append(torch.where(h, topk_ids[rows] - j * local, -1))
        wts.append(torch.where(h, topk_weights[rows], 0.0))
        counts.append(rows.numel())
    send_counts = torch.tensor(counts, dtype=torch.int64, device=x.device)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    out_splits = recv_counts.tolist()
    n = sum(out_splits)
    recv_x = x.new_empty((n, x.shape[1]))
    dist.all_to_all_single(recv_x, torch.cat(xs), out_splits, counts)
    recv_ids = topk_ids.new_empty((n, topk_ids.shape[1]))
    dist.all_to_all_single(recv_ids, torch.cat(ids), out_splits, counts)
    recv_w = topk_weights.new_empty((n, topk_weights.shape[1]))
    dist.all_to_all_single(recv_w, torch.cat(wts), out_splits, counts)
    per_expert = torch.bincount(recv_ids[recv_ids >= 0], minlength=local)
    return recv_x, recv_ids, recv_w, per_expert


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, topk: int, experts: int):
    top, g = skewed_router(seed, rank, device, tokens, experts, topk)
    x = randn((tokens, hidden), dtype_of(dtype), device, g)
    return (x, top.indices, torch.softmax(top.values, dim=-1), torch.tensor(experts, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    local = int(inputs[0][3]) // w
    outs = []
    for r in range(w):
        xs, ids, wts = [], [], []
        for x, topk_ids, topk_w, _ in inputs:  # sources in rank order
            for t in range(x.shape[0]):
                lo = [int(e) - r * local if r * local <= int(e) < (r + 1) * local else -1 for e in topk_ids[t]]
                if any(v >= 0 for v in lo):
                    xs.append(x[t])
                    ids.append(lo)
                    wts.append([float(topk_w[t, i]) if v >= 0 else 0.0 for i, v in enumerate(lo)])
        dev = inputs[0][0].device
        ids_t = torch.tensor(ids, dtype=torch.int64, device=dev)
        count = torch.tensor([sum(row.count(e) for row in ids) for e in range(local)], dtype=torch.int64, device=dev)
        outs.append((torch.stack(xs), ids_t, torch.tensor(wts, dtype=torch.float32, device=dev), count))
    return outs
