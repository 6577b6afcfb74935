"""Averages each micro-batch over its own valid tokens and divides by the number of micro-batches and ranks: the
per-sequence-mean mistake gradient accumulation used to make."""

import torch
import torch.distributed as dist


def solution(logits, labels):
    w = dist.get_world_size()
    micro = logits.shape[0]
    valid = labels != -100
    per = valid.sum(dim=-1).clamp(min=1).float()
    logp = torch.log_softmax(logits.float(), dim=-1)
    safe = labels.clamp(min=0)
    nll = -logp.gather(-1, safe[..., None]).squeeze(-1) * valid
    scale = 1 / (per * micro * w)
    grads = logp.exp()
    grads.scatter_add_(-1, safe[..., None], -torch.ones_like(safe[..., None], dtype=grads.dtype))
    grads *= valid[..., None] * scale[:, None, None]
    return nll.sum(dim=-1) * scale, grads.to(logits.dtype)
