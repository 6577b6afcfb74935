"""Gathers exact rows with an uneven all-to-all but lays the runs out last rank first."""

import torch
import torch.distributed as dist


def solution(x):
    w = dist.get_world_size()
    lengths = torch.empty(w, dtype=torch.int64, device=x.device)
    dist.all_gather_into_tensor(lengths, torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device))
    counts = lengths.tolist()
    out = x.new_empty((sum(counts), *x.shape[1:]))
    send = x.repeat(w, *([1] * (x.dim() - 1))).contiguous()
    dist.all_to_all_single(out, send, output_split_sizes=counts, input_split_sizes=[x.shape[0]] * w)
    return torch.cat(list(reversed(out.split(counts))))
