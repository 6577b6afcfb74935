"""ZeRO stage 2 gradient reduction: every rank's bit16 gradients, in parameter order, form one flat buffer padded to
a multiple of W; chunk r of the average goes to rank r, which keeps it as an fp32 gradient partition."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def _shapes(layers: int, hidden: int) -> list[tuple[int, ...]]:
    """A GPT block's parameters in model order, then a learnable scalar (a logit scale, as CLIP has)."""
    h = hidden
    shapes = []
    for _ in range(layers):
        shapes += [(h,), (3 * h, h), (3 * h,), (h, h), (h,), (h,), (4 * h, h), (4 * h,), (h, 4 * h), (h,)]
    return shapes + [(1,)]


def solution(*grads):
    world = dist.get_world_size()
    numel = sum(g.numel() for g in grads)
    shard = -(-numel // world)
    flat = torch.zeros(world * shard, dtype=grads[0].dtype, device=grads[0].device)
    torch.cat([g.reshape(-1) for g in grads], out=flat[:numel])
    # All-to-all rather than a bit16 reduce-scatter: the owner sums the W chunks in fp32.
    chunks = torch.empty_like(flat)
    dist.all_to_all_single(chunks, flat)
    return chunks.view(world, shard).float().sum(0) / world


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, hidden: int):
    shapes = _shapes(layers, hidden)
    # Gradient magnitudes differ from tensor to tensor (norms, embeddings-like rows, output layers).
    magnitude = torch.exp(randn((len(shapes),), torch.float32, "cpu", shared_generator(seed))).tolist()
    g = rank_generator(seed, rank, device)
    return tuple(randn(s, dtype_of(dtype), device, g, scale=m) for s, m in zip(shapes, magnitude))


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    flat = sum(torch.cat([t.double().reshape(-1) for t in inp]) for inp in inputs) / world
    shard = math.ceil(flat.numel() / world)
    flat = torch.cat([flat, flat.new_zeros(world * shard - flat.numel())])
    return [flat[r * shard:(r + 1) * shard].float() for r in range(world)]
