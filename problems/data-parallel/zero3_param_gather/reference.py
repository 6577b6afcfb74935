"""ZeRO stage 3 forward: every layer's parameters exist only as flat 1/W shards; the layer is all-gathered right
before it runs (the next one is prefetched asynchronously while the current one computes) and dropped after."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def _unflatten(flat: torch.Tensor, hidden: int):
    """fc1.weight [4h, h], fc1.bias [4h], fc2.weight [h, 4h], fc2.bias [h], in that order, row-major."""
    ffn = 4 * hidden
    sizes = [ffn * hidden, ffn, hidden * ffn, hidden]
    w1, b1, w2, b2 = flat[: sum(sizes)].split(sizes)
    return w1.view(ffn, hidden), b1, w2.view(hidden, ffn), b2


def solution(x, *shards):
    world = dist.get_world_size()
    hidden = x.shape[1]

    def fetch(shard):
        full = torch.empty(world * shard.numel(), dtype=shard.dtype, device=shard.device)
        return full, dist.all_gather_into_tensor(full, shard, async_op=True)

    h = x
    pending = fetch(shards[0])
    for layer in range(len(shards)):
        full, work = pending
        work.wait()
        if layer + 1 < len(shards):
            pending = fetch(shards[layer + 1])  # prefetch the next layer while this one computes
        w1, b1, w2, b2 = _unflatten(full, hidden)
        h = h + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)
        del full, w1, b1, w2, b2  # release the unsharded layer
    return h


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, tokens: int,
                hidden: int):
    dt = dtype_of(dtype)
    ffn = 4 * hidden
    sizes = [ffn * hidden, ffn, hidden * ffn, hidden]  # fc1.weight, fc1.bias, fc2.weight, fc2.bias (_unflatten)
    scales = [hidden ** -0.5, 0.1, 0.5 * ffn ** -0.5, 0.1]
    numel = sum(sizes)  # 8 h^2 + 5 h
    shard = -(-numel // world_size)
    lo, hi = min(rank * shard, numel), min((rank + 1) * shard, numel)
    g = rank_generator(seed, rank, device)
    shards = []
    for _ in range(layers):
        # Each rank draws only its slice [lo, hi) of the layer's flat parameters, every position at the scale of the
        # tensor it falls in, from its own generator (a slice of one shared draw would give it its peers' slices),
        # then pads the last shard with zeros; the layer is the ranks' slices concatenated, as the oracle builds it.
        parts, start = [], 0
        for size, scale in zip(sizes, scales):
            n = min(hi, start + size) - max(lo, start)
            if n > 0:
                parts.append(randn((n,), dt, device, g, scale=scale))
            start += size
        parts.append(torch.zeros(shard - (hi - lo), dtype=dt, device=device))
        shards.append(torch.cat(parts))
    x = randn((tokens, hidden), dt, device, g)
    return (x, *shards)


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    hidden = inputs[0][0].shape[1]
    layers = [_unflatten(torch.cat([inp[1 + l].to(acc) for inp in inputs]), hidden) for l in range(len(inputs[0]) - 1)]
    out = []
    for inp in inputs:
        h = inp[0].to(acc)
        for w1, b1, w2, b2 in layers:
            h = h + (F.gelu(h @ w1.t() + b1)) @ w2.t() + b2
        out.append(h.to(dt))
    return out
