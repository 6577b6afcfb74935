"""All-reduces the valid-token count first (it depends only on the labels), then runs all micro-batches at once."""

import torch
import torch.distributed as dist


def solution(logits, labels):
    valid = labels != -100
    count = valid.sum().reshape(1).double()
    dist.all_reduce(count)
    logp = torch.log_softmax(logits.float(), dim=-1)
    safe = labels.clamp(min=0)
    nll = -logp.gather(-1, safe[..., None]).squeeze(-1) * valid
    grads = logp.exp()
    grads.scatter_add_(-1, safe[..., None], -torch.ones_like(safe[..., None], dtype=grads.dtype))
    grads *= (valid[..., None] / count[0]).float()
    return (nll.sum(dim=-1) / count[0]).float(), grads.to(logits.dtype)
