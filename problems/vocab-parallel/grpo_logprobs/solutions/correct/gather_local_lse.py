"""All-gathers each rank's local logsumexp and combines them with another logsumexp; the target logit comes from
an all-reduce of the owner's value."""
import torch
import torch.distributed as dist


def solution(logits, input_ids):
    rank, world = dist.get_rank(), dist.get_world_size()
    x = logits.float()[:, :-1]
    shard = x.shape[-1]
    lse = torch.logsumexp(x, dim=-1).contiguous()
    every = torch.empty((world * lse.shape[0], lse.shape[1]), dtype=lse.dtype, device=lse.device)
    dist.all_gather_into_tensor(every, lse)
    total = torch.logsumexp(every.view(world, *lse.shape), dim=0)
    ids = input_ids[:, 1:]
    mine = (ids >= rank * shard) & (ids < (rank + 1) * shard)
    tgt = torch.where(mine, x.gather(-1, (ids - rank * shard).clamp(0, shard - 1)[..., None]).squeeze(-1), 0.0)
    dist.all_reduce(tgt)
    return tgt - total
