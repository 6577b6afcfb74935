"""Data-parallel gradient averaging followed by global-norm clipping: every rank holds its own full gradients (no
distributed optimizer), which are all-reduced and averaged; the L2 norm of the averaged gradients over every tensor
sets one clipping coefficient, and every averaged gradient is scaled by it."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(max_norm, *grads):
    w = dist.get_world_size()
    averaged = []
    for g in grads:
        buf = g.to(torch.float32, copy=True)  # the reduction in float32 (grad_reduce_in_fp32), never in place on g
        dist.all_reduce(buf)
        averaged.append(buf.div_(w))
    total_norm = torch.stack([torch.linalg.vector_norm(a) ** 2 for a in averaged]).sum().sqrt()
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    clipped = tuple((a * coef).to(g.dtype) for a, g in zip(averaged, grads))
    return (*clipped, torch.stack([total_norm, coef]))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tensors: int, unit: int):
    shared = shared_generator(seed)
    max_norm = 0.5 + 1.5 * torch.rand((), generator=shared)
    # The averaged gradients' norm lands near max_norm * [0.7, 3]: most trials clip, some (about 1 in 8) do not.
    # Each rank's gradient is a direction shared by all ranks plus noise of the same size, so the average keeps
    # about 0.7 of the norm of one rank's.
    spread = max_norm.item() * (0.7 + 2.3 * torch.rand((), generator=shared).item())
    max_norm = max_norm.to(device)
    total = unit * tensors * (tensors + 1) // 2
    common = [randn(((i + 1) * unit,), torch.float32, device, shared_generator(seed + i + 1, device))
              for i in range(tensors)]
    g = rank_generator(seed, rank, device)
    grads = tuple(((c + randn(c.shape, torch.float32, device, g)) * (spread / (2 * total) ** 0.5)).to(dtype_of(dtype))
                  for c in common)
    return (max_norm, *grads)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    averaged = [sum(inp[1 + i].double() for inp in inputs) / w for i in range(len(inputs[0]) - 1)]
    total_norm = sum(a.pow(2).sum() for a in averaged).sqrt()
    coef = (inputs[0][0].double() / (total_norm + 1e-6)).clamp(max=1.0)
    stats = torch.stack([total_norm, coef]).float()
    out = tuple((a * coef).to(g.dtype) for a, g in zip(averaged, inputs[0][1:]))
    return [(*out, stats.clone()) for _ in inputs]
