"""One uneven all-to-all over every rank in token-major layout (prefill ranks send, decode ranks receive), then the
page scatter."""

import torch
import torch.distributed as dist


def solution(kv, seq_lens, dest, block_table, num_blocks, block_size, ranks_per_node):
    w, rank = dist.get_world_size(), dist.get_rank()
    prefill = w // 2
    layers, _, _, hp, hd = kv.shape
    per_dest = [int(seq_lens[dest == d].sum()) for d in range(prefill)]
    if rank < prefill:
        owner = torch.repeat_interleave(dest, seq_lens)
        order = torch.argsort(owner, stable=True)  # tokens grouped by decode rank, request order kept
        send = kv.permute(2, 0, 1, 3, 4)[order].contiguous()  # [T, layers, 2, hp, hd]
        recv = kv.new_empty((0, layers, 2, hp, hd))
        dist.all_to_all_single(recv, send, [0] * w, [0] * prefill + per_dest)
        return kv.new_empty(0)
    d = rank - prefill
    n = per_dest[d]
    send = kv.new_empty((0, layers, 2, hp, hd))
    recv = kv.new_empty((prefill * n, layers, 2, hp, hd))
    dist.all_to_all_single(recv, send, [n] * prefill + [0] * prefill, [0] * w)
    data = recv.view(prefill, n, layers, 2, hp, hd).permute(1, 2, 3, 0, 4, 5).reshape(n, layers, 2, prefill * hp, hd)
    bs, nb = int(block_size), int(num_blocks)
    cache = kv.new_zeros((nb * bs, layers, 2, prefill * hp, hd))
    lens = seq_lens[dest == d]
    req = torch.repeat_interleave(torch.nonzero(dest == d).flatten(), lens)
    t = torch.arange(n, device=kv.device) - torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
    cache[block_table[req, t // bs] * bs + t % bs] = data
    return cache.view(nb, bs, layers, 2, prefill * hp, hd).permute(2, 3, 0, 1, 4, 5).contiguous()
