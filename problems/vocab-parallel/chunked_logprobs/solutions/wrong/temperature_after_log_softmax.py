"""Wrong: takes the log-softmax of the untempered logits and divides the log-prob by the temperature afterwards (and
reports the untempered entropy), instead of scaling the logits before the softmax."""

import torch
import torch.distributed as dist


def solution(hidden, weight, target, temperature):
    rank = dist.get_rank()
    shard = weight.shape[0]
    z = (hidden @ weight.t()).float()
    m = z.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    e = torch.exp(z - m[:, None])
    idx = target - rank * shard
    owned = (idx >= 0) & (idx < shard)
    tgt = torch.where(owned, z.gather(-1, idx.clamp(0, shard - 1)[:, None]).squeeze(-1), 0.0)
    stats = torch.stack([e.sum(-1), (e * z).sum(-1), tgt])
    dist.all_reduce(stats)
    log_total = stats[0].log()
    return (stats[2] - m - log_total) / temperature, m + log_total - stats[1] / stats[0]
