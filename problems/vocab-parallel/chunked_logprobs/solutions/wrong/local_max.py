"""Wrong: each shard's exponentials are taken against its own max, and the sums are added across ranks as if they
shared one max."""

import torch
import torch.distributed as dist


def solution(hidden, weight, target, temperature):
    rank = dist.get_rank()
    shard = weight.shape[0]
    z = (hidden @ weight.t()).float() / temperature
    m = z.amax(dim=-1)
    e = torch.exp(z - m[:, None])
    idx = target - rank * shard
    owned = (idx >= 0) & (idx < shard)
    tgt = torch.where(owned, z.gather(-1, idx.clamp(0, shard - 1)[:, None]).squeeze(-1), 0.0)
    stats = torch.stack([e.sum(-1), (e * z).sum(-1), tgt, m / dist.get_world_size()])
    dist.all_reduce(stats)
    log_total = stats[0].log()
    return stats[2] - stats[3] - log_total, stats[3] + log_total - stats[1] / stats[0]
