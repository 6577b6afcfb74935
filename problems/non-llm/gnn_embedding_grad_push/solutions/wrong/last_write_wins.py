"""Scatters the received rows into the table instead of adding them: when two ranks touched the same node, one
rank's gradient overwrites the other's."""

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
    out[got_ids - rank * per] = got
    return out
