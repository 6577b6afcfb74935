"""KV-cache transfer in disaggregated prefill/decode serving.

Ranks are grouped into nodes of ranks_per_node consecutive ranks (problems.common.node_layout); ranks [0, P) with
P = W/2 serve prefill and the rest decode: on several nodes the first and the second half of the nodes, so every byte
crosses nodes (on a single-node profile both halves share the node). Prefill
ranks are tensor parallel over KV heads: prefill rank p holds heads
[p*Hp, (p+1)*Hp) of every request's keys and values, tokens contiguous in request order. Ranks [P, W) are decode
ranks, data parallel over requests: request i belongs to decode rank P + dest[i], which stores all heads
of its tokens in a paged cache. Each prefill rank sends each decode rank the head shard of that rank's requests;
the decode rank joins the shards along heads and writes token t of request i to page block_table[i, t // bs],
slot t % bs (bs = block_size)."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, node_layout, randn, rank_generator, shared_generator


def _tokens_of(d: int, seq_lens: torch.Tensor, dest: torch.Tensor) -> torch.Tensor:
    """Positions, in the prefill layout, of the tokens of decode rank d's requests, in request order."""
    return torch.nonzero(torch.repeat_interleave(dest, seq_lens) == d).flatten()


def _slots(d: int, seq_lens: torch.Tensor, dest: torch.Tensor, block_table: torch.Tensor, bs: int) -> torch.Tensor:
    """Flat cache slots (page * bs + offset) of decode rank d's tokens, in request order."""
    mine = torch.nonzero(dest == d).flatten()
    lens = seq_lens[mine]
    req = torch.repeat_interleave(mine, lens)
    start = torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
    t = torch.arange(req.numel(), device=seq_lens.device) - start
    return block_table[req, t // bs] * bs + t % bs


def solution(kv, seq_lens, dest, block_table, num_blocks, block_size, ranks_per_node):
    w, rank = dist.get_world_size(), dist.get_rank()
    node_layout(w, int(ranks_per_node))  # on several nodes, prefill and decode are the first and second half of them
    prefill = w // 2
    layers, _, _, heads_per_rank, head_dim = kv.shape
    if rank < prefill:
        ops = [dist.P2POp(dist.isend, kv[:, :, _tokens_of(d, seq_lens, dest)].contiguous(), prefill + d)
               for d in range(w - prefill)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return kv.new_empty(0)
    d = rank - prefill
    n_tok = int(seq_lens[dest == d].sum())
    shards = [kv.new_empty((layers, 2, n_tok, heads_per_rank, head_dim)) for _ in range(prefill)]
    for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, shards[p], p) for p in range(prefill)]):
        req.wait()
    bs = int(block_size)
    cache = kv.new_zeros((layers, 2, int(num_blocks) * bs, prefill * heads_per_rank, head_dim))
    cache[:, :, _slots(d, seq_lens, dest, block_table, bs)] = torch.cat(shards, dim=3)
    return cache.view(layers, 2, int(num_blocks), bs, prefill * heads_per_rank, head_dim)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int,
                kv_heads: int, head_dim: int, requests: int, min_len: int, max_len: int, block_size: int,
                ranks_per_node: int):
    nodes, _ = node_layout(world_size, ranks_per_node)
    prefill = decode = world_size // 2
    if (nodes > 1 and nodes % 2) or world_size % 2 or kv_heads % prefill or requests % decode or requests % 2:
        raise ValueError("the ranks (and the nodes, if several) must split in two halves, kv_heads divide by W/2, "
                         "requests by W/2 and by 2")
    sg = shared_generator(seed, "cpu")
    # Lengths come in pairs l, min_len + max_len - l, shuffled: random, yet their total is always
    # requests * (min_len + max_len) / 2, so the roofline can count the bytes exactly.
    half = torch.randint(min_len, max_len + 1, (requests // 2,), generator=sg)
    seq_lens = torch.cat([half, min_len + max_len - half])[torch.randperm(requests, generator=sg)]
    dest = torch.randperm(requests, generator=sg) % decode  # each decode rank serves requests / decode of them
    max_blocks = -(-max_len // block_size)
    num_blocks = requests // decode * max_blocks
    block_table = torch.full((requests, max_blocks), -1, dtype=torch.int64)
    for d in range(decode):
        pages = torch.randperm(num_blocks, generator=sg)  # free pages of decode rank d, in allocation order
        used = 0
        for i in torch.nonzero(dest == d).flatten().tolist():
            n = -(-int(seq_lens[i]) // block_size)
            block_table[i, :n] = pages[used:used + n]
            used += n
    heads = kv_heads // prefill
    tokens = int(seq_lens.sum()) if rank < prefill else 0
    kv = randn((layers, 2, tokens, heads, head_dim), dtype_of(dtype), device, rank_generator(seed, rank, device))
    to = lambda t: t.to(device)
    return (kv, to(seq_lens), to(dest), to(block_table), torch.tensor(num_blocks, device=device),
            torch.tensor(block_size, device=device), torch.tensor(ranks_per_node, device=device))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    prefill = w // 2
    kv0, seq_lens, dest, block_table, num_blocks, block_size, _ = inputs[0]
    layers, _, _, heads, head_dim = kv0.shape
    bs, nb = int(block_size), int(num_blocks)
    full = torch.cat([inputs[p][0] for p in range(prefill)], dim=3)  # all heads, prefill layout
    offsets = torch.cumsum(seq_lens, 0) - seq_lens
    out = [kv0.new_empty(0) for _ in range(prefill)]
    for d in range(w - prefill):
        cache = kv0.new_zeros((layers, 2, nb, bs, prefill * heads, head_dim))
        for i in range(len(seq_lens)):
            if int(dest[i]) != d:
                continue
            for t in range(int(seq_lens[i])):
                cache[:, :, int(block_table[i, t // bs]), t % bs] = full[:, :, int(offsets[i]) + t]
        out.append(cache)
    return out
