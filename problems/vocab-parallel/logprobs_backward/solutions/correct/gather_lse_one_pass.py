"""All-gathers each shard's log-sum-exp (one exchange), combines them with another log-sum-exp, and writes
grad_out * (onehot - exp(z - lse)) with a masked comparison instead of a scatter."""

import torch
import torch.distributed as dist


def solution(logits, target, grad_output):
    rank, world = dist.get_rank(), dist.get_world_size()
    z = logits.float()
    shard = z.shape[-1]
    lse = torch.logsumexp(z, dim=-1)
    every = torch.empty((world, lse.shape[0]), dtype=torch.float32, device=z.device)
    dist.all_gather_into_tensor(every.view(-1), lse.contiguous())
    total = torch.logsumexp(every, dim=0)
    ids = torch.arange(rank * shard, (rank + 1) * shard, device=z.device)
    onehot = (ids[None, :] == target[:, None]).float()
    return (grad_output[:, None] * (onehot - torch.exp(z - total[:, None]))).to(logits.dtype)
