"""Top-k over vocabulary shards: each rank takes the top k of its own slice, the (value, global id) candidates of
every rank are all-gathered, and the top k of those is the global answer."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn

K = 50


def solution(logits):
    rank, world = dist.get_rank(), dist.get_world_size()
    values, idx = logits.topk(K, dim=1)
    idx = idx + rank * logits.shape[1]
    all_values = torch.empty((world * values.shape[0], K), dtype=values.dtype, device=values.device)
    all_idx = torch.empty((world * idx.shape[0], K), dtype=idx.dtype, device=idx.device)
    dist.all_gather_into_tensor(all_values, values)
    dist.all_gather_into_tensor(all_idx, idx)
    rows = values.shape[0]
    cand_values = all_values.view(world, rows, K).transpose(0, 1).reshape(rows, world * K)
    cand_idx = all_idx.view(world, rows, K).transpose(0, 1).reshape(rows, world * K)
    top_values, pos = cand_values.topk(K, dim=1)
    return top_values, cand_idx.gather(1, pos)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, vocab: int):
    shard = vocab // world_size
    # Background logits stay below 7.5; each row has 2K "head" tokens, one at a random position in each of 2K equal
    # strides of the vocabulary, with distinct values 8 + m/16 (m < 128, exact in bf16), so the top K is K distinct
    # head values and no tie can reach the answer. A head belongs to the rank whose shard holds its stride's start
    # (a stride that runs past the shard is cut there) and is that rank's own draw, position and value: its m is
    # one of the rank's own levels, m = rank (mod W), so no two ranks' heads tie and no rank knows its peers' heads,
    # or the answer, before it hears from them. Which heads make the top K is random, so it comes unevenly from
    # the shards.
    g = rank_generator(seed, rank, device)
    logits = randn((tokens, shard), torch.float32, device, g, scale=2.0)
    logits.clamp_(max=7.5)
    stride = vocab // (2 * K)
    first = min(-(-rank * shard // stride), 2 * K)
    last = min(-(-(rank + 1) * shard // stride), 2 * K)  # this rank's heads: strides first .. last - 1
    heads, levels = last - first, len(range(rank, 128, world_size))
    if heads > levels:
        raise ValueError(f"{heads} heads per row do not fit {levels} distinct values at W={world_size}")
    start = torch.arange(first, last, device=device) * stride - rank * shard
    width = (shard - start).clamp(max=stride)
    col = start + (torch.rand((tokens, heads), generator=g, device=g.device) * width).long().minimum(width - 1)
    level = torch.rand((tokens, levels), generator=g, device=g.device).argsort(dim=1)[:, :heads]
    head = 8.0 + (rank + world_size * level).float() / 16
    logits.scatter_(1, col, head)
    return (logits.to(dtype_of(dtype)),)


def oracle(inputs: list[tuple], **_):
    full = torch.cat([inp[0] for inp in inputs], dim=1)
    order = torch.sort(full.double(), dim=1, descending=True, stable=True).indices[:, :K]
    values = full.gather(1, order)
    return [(values.clone(), order.clone()) for _ in inputs]
