"""Wrong: scores the token at the same position (input_ids[:, t]) instead of the next one (input_ids[:, t + 1])."""
import torch
import torch.distributed as dist


def solution(logits, input_ids):
    rank = dist.get_rank()
    x = logits[:, :-1].float()
    shard = x.shape[-1]
    m = x.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    x = x - m[..., None]
    local = input_ids[:, :-1] - rank * shard
    outside = (local < 0) | (local >= shard)
    picked = x.gather(-1, local.clamp(0, shard - 1)[..., None]).squeeze(-1).masked_fill(outside, 0.0)
    both = torch.stack([picked, x.exp().sum(dim=-1)])
    dist.all_reduce(both)
    return both[0] - both[1].log()
