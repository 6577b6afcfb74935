"""Every rank sends exactly batch / W rows to each owner (the sampler is balanced), so one even all-to-all of ids
and one of gradients suffice, with no count exchange."""

import torch
import torch.distributed as dist


def solution(ids, grad, nodes_per_rank):
    rank = dist.get_rank()
    per = int(nodes_per_rank)
    order = torch.argsort(ids // per, stable=True)
    got_ids = torch.empty_like(ids)
    dist.all_to_all_single(got_ids, ids[order].contiguous())
    got = torch.empty_like(grad)
    dist.all_to_all_single(got, grad[order].contiguous())
    out = torch.zeros((per, grad.shape[1]), dtype=torch.float32, device=grad.device)
    out.index_add_(0, got_ids - rank * per, got)
    return out
