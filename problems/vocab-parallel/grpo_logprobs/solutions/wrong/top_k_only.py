"""Applies top-k but forgets top-p: the normaliser sums every top-k survivor."""

import torch
import torch.distributed as dist


def solution(logits, target, top_k, top_p):
    w, rank = dist.get_world_size(), dist.get_rank()
    k = int(top_k)
    batch, seq, shard = logits.shape
    z = logits.reshape(-1, shard).float()
    cand = z.topk(k, dim=-1).values.contiguous()
    every = torch.empty((w * cand.shape[0], k), dtype=cand.dtype, device=cand.device)
    dist.all_gather_into_tensor(every, cand)
    every = every.view(w, -1, k)
    local = target.reshape(-1) - rank * shard
    owned = (local >= 0) & (local < shard)
    tz = z.gather(1, local.clamp(0, shard - 1)[:, None]).squeeze(1).masked_fill(~owned, 0.0)
    dist.all_reduce(tz)
    values = every.permute(1, 0, 2).reshape(z.shape[0], w * k).topk(k, dim=-1).values
    return (tz - torch.logsumexp(values, dim=-1)).view(batch, seq)
