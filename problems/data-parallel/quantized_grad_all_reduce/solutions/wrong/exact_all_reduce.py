"""Wrong: skips quantisation and returns the exact float32 mean (the spec asks for the mean of dequantised codes)."""

import torch.distributed as dist


def solution(grad):
    out = grad.float()
    dist.all_reduce(out)
    return out / dist.get_world_size()
