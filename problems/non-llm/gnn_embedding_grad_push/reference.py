"""Backward of a distributed node-embedding fetch: every rank holds the gradients of the embedding rows its
mini-batch used (distinct node ids, most owned by other ranks), and each row's gradient must reach the rank that
owns the row, where the contributions of every rank are summed into the gradient of its slice of the table.
Ownership is a range partition: node v belongs to rank v // nodes_per_rank."""

import torch
import torch.distributed as dist

from problems.common import rank_generator, randn, shared_generator


def solution(ids: torch.Tensor, grad: torch.Tensor, nodes_per_rank: torch.Tensor) -> torch.Tensor:
    w, rank = dist.get_world_size(), dist.get_rank()
    per = int(nodes_per_rank)
    owner = ids // per
    order = torch.argsort(owner, stable=True)
    send_counts = torch.bincount(owner, minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)  # how many rows each rank will push here
    sc, rc = send_counts.tolist(), recv_counts.tolist()
    got_ids = ids.new_empty(sum(rc))
    dist.all_to_all_single(got_ids, ids[order].contiguous(), output_split_sizes=rc, input_split_sizes=sc)
    got = grad.new_empty((sum(rc), grad.shape[1]))
    dist.all_to_all_single(got, grad[order].contiguous(), output_split_sizes=rc, input_split_sizes=sc)
    out = torch.zeros((per, grad.shape[1]), dtype=torch.float32, device=grad.device)
    out.index_add_(0, got_ids - rank * per, got.float())
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, nodes_per_rank: int,
                batch: int, dim: int):
    # A balanced sampler: batch / W distinct nodes from every rank's range. Nodes are drawn from a hot subset (a
    # tenth of each range, shared by every rank), so ranks touch the same rows and the owner sums contributions.
    hot = max(batch // world_size * 2, nodes_per_rank // 10)
    shared = shared_generator(seed)
    hot_rows = torch.stack([torch.randperm(nodes_per_rank, generator=shared)[:hot] for _ in range(world_size)])
    g = rank_generator(seed, rank)
    take = batch // world_size
    picks = torch.stack([torch.randperm(hot, generator=g)[:take] for _ in range(world_size)])
    ids = (hot_rows.gather(1, picks) + torch.arange(world_size)[:, None] * nodes_per_rank).reshape(-1)
    ids = ids[torch.randperm(ids.numel(), generator=g)]  # the batch's own order, not grouped by owner
    grad = randn((ids.numel(), dim), torch.float32, device, rank_generator(seed, rank, device))
    return ids.to(device), grad, torch.tensor(nodes_per_rank, dtype=torch.int64, device=device)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    per, dim = int(inputs[0][2]), inputs[0][1].shape[1]
    table = torch.zeros((w * per, dim), dtype=torch.float64)
    for ids, grad, _ in inputs:
        table.index_add_(0, ids, grad.double())
    return [table[r * per:(r + 1) * per].float() for r in range(w)]
