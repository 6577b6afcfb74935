"""Gathers every rank's chunks with two all-gathers and picks the neighbouring virtual stages locally."""

import torch
import torch.distributed as dist


def solution(acts, grads):
    w, r = dist.get_world_size(), dist.get_rank()
    chunks = acts.shape[0]
    all_acts = torch.empty((w, *acts.shape), dtype=acts.dtype, device=acts.device)
    all_grads = torch.empty_like(all_acts)
    dist.all_gather_into_tensor(all_acts.view(-1, *acts.shape[2:]), acts.contiguous().view(-1, *acts.shape[2:]))
    dist.all_gather_into_tensor(all_grads.view(-1, *grads.shape[2:]), grads.contiguous().view(-1, *grads.shape[2:]))
    act_in = torch.zeros_like(acts)
    grad_in = torch.zeros_like(grads)
    for v in range(chunks):
        s = v * w + r
        if s > 0:
            act_in[v] = all_acts[(s - 1) % w, (s - 1) // w]
        if s < chunks * w - 1:
            grad_in[v] = all_grads[(s + 1) % w, (s + 1) // w]
    return act_in, grad_in
