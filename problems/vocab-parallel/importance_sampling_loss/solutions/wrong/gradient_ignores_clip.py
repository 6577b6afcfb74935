"""Wrong: the loss values are right, but the gradient always follows the unclipped branch, so tokens whose ratio has
left the trust region still push the policy."""

import torch
import torch.distributed as dist


def solution(logits, target, old_logprobs, advantages, mask):
    rank = dist.get_rank()
    z = logits.float()
    shard = z.shape[-1]
    m = z.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    e = torch.exp(z - m[:, None])
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    picked = z.gather(-1, local.clamp(0, shard - 1)[:, None]).squeeze(-1)
    stats = torch.stack([e.sum(-1), torch.where(owned, picked, 0.0)])
    dist.all_reduce(stats)
    ratio = torch.exp(stats[1] - m - stats[0].log() - old_logprobs)
    token_loss = -torch.minimum(ratio * advantages, ratio.clamp(0.8, 1.28) * advantages) * mask
    coef = -advantages * ratio * mask / mask.sum()
    grad = e * (-coef / stats[0])[:, None]
    grad.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], (coef * owned)[:, None])
    return token_loss, grad.to(logits.dtype)
