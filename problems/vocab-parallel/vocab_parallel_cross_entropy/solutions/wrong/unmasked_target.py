"""Wrong: clamps the target index into the local shard but forgets to zero it on ranks that do not own it, so the
summed target logit picks up a stray logit from every other rank."""

import torch.distributed as dist


def solution(logits, target):
    rank = dist.get_rank()
    x = logits.float()
    shard = x.shape[1]
    m = x.amax(dim=1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    x = x - m[:, None]
    picked = x.gather(1, (target - rank * shard).clamp(0, shard - 1)[:, None]).squeeze(1)
    sum_exp = x.exp().sum(dim=1)
    dist.all_reduce(picked)
    dist.all_reduce(sum_exp)
    return sum_exp.log() - picked
