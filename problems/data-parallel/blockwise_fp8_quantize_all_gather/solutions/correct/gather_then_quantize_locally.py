"""All-gathers the high-precision shards, then quantises and dequantises the full weight tile by tile (more bytes)."""

import torch
import torch.distributed as dist


def solution(shard):
    world = dist.get_world_size()
    full = torch.empty((world * shard.shape[0], shard.shape[1]), dtype=shard.dtype, device=shard.device)
    dist.all_gather_into_tensor(full, shard.contiguous())
    r, c = full.shape
    out = torch.empty_like(full)
    scales = torch.empty((r // 128, c // 128), dtype=torch.float32, device=full.device)
    for i in range(r // 128):
        rows = full[128 * i : 128 * (i + 1)].float()
        for j in range(c // 128):
            tile = rows[:, 128 * j : 128 * (j + 1)]
            amax = tile.abs().max()
            s = amax / torch.tensor(448.0, device=full.device) if amax > 0 else torch.ones((), device=full.device)
            code = torch.clamp(tile / s, -448.0, 448.0).to(torch.float8_e4m3fn)
            out[128 * i : 128 * (i + 1), 128 * j : 128 * (j + 1)] = (code.float() * s).to(full.dtype)
            scales[i, j] = s
    return out, scales
