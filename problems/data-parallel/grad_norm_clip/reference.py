"""Global gradient-norm clipping: every rank holds only shards of the gradients, so the squared norms are summed
locally in float32, all-reduced, and every shard is scaled by the same clipping coefficient."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(max_norm, *grads):
    local = torch.stack([torch.linalg.vector_norm(g, dtype=torch.float32) ** 2 for g in grads]).sum()
    dist.all_reduce(local)
    total_norm = local.sqrt()
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    # A float32 0-dim factor keeps each shard's dtype while the product is formed in float32.
    clipped = tuple(g * coef for g in grads)
    return (*clipped, torch.stack([total_norm, coef]))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tensors: int, unit: int):
    shared = shared_generator(seed)
    max_norm = 0.5 + 1.5 * torch.rand((), generator=shared)
    # The global norm lands near max_norm * [0.7, 3]: most trials clip, some (about 1 in 8) do not.
    spread = max_norm.item() * (0.7 + 2.3 * torch.rand((), generator=shared).item())
    max_norm = max_norm.to(device)
    total = world_size * unit * tensors * (tensors + 1) // 2
    g = rank_generator(seed, rank, device)
    grads = tuple(randn(((i + 1) * unit,), dtype_of(dtype), device, g, scale=spread / total ** 0.5)
                  for i in range(tensors))
    return (max_norm, *grads)


def oracle(inputs: list[tuple], **_):
    total_norm = sum(sum(g.double().pow(2).sum() for g in inp[1:]) for inp in inputs).sqrt()
    coef = (inputs[0][0].double() / (total_norm + 1e-6)).clamp(max=1.0)
    stats = torch.stack([total_norm, coef]).float()
    return [(*((g.double() * coef).to(g.dtype) for g in inp[1:]), stats.clone()) for inp in inputs]
