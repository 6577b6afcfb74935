"""FP8 all-gather of FSDP weights (torchao float8 with FSDP2): every weight is sharded on dim 0; its scale is
448 / amax over the whole weight, agreed with one all-reduce; each rank casts its shard to float8_e4m3fn and the
1-byte codes are all-gathered."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator

FP8_MAX = 448.0  # largest finite float8_e4m3fn value
AMAX_FLOOR = 1e-12


def scales_from_amax(amax: torch.Tensor) -> torch.Tensor:
    # A tensor divisor keeps the division IEEE float32 on every device.
    return torch.full_like(amax, FP8_MAX) / amax.clamp(min=AMAX_FLOOR)


def to_fp8_bytes(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    y = (x.float() * scale).clamp(-FP8_MAX, FP8_MAX)
    return y.to(torch.float8_e4m3fn).view(torch.uint8)


def solution(*shards):
    world = dist.get_world_size()
    amax = torch.stack([s.abs().amax().float() for s in shards])
    dist.all_reduce(amax, op=dist.ReduceOp.MAX)
    scales = scales_from_amax(amax)
    full = []
    for i, s in enumerate(shards):
        codes = to_fp8_bytes(s, scales[i]).contiguous()
        out = torch.empty((world * s.shape[0],) + tuple(s.shape[1:]), dtype=torch.uint8, device=s.device)
        dist.all_gather_into_tensor(out, codes)
        full.append(out)
    return (*full, scales)


def _shapes(layers: int, hidden: int) -> list[tuple[int, int]]:
    h = hidden
    return [s for _ in range(layers) for s in ((3 * h, h), (h, h), (4 * h, h), (h, 4 * h))]


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, hidden: int):
    shapes = _shapes(layers, hidden)
    # Per-weight magnitudes differ (init scale times a shared random factor), so the scales differ.
    factor = torch.exp(randn((len(shapes),), torch.float32, "cpu", shared_generator(seed), scale=0.5)).tolist()
    g = rank_generator(seed, rank, device)
    return tuple(randn((d0 // world_size, d1), dtype_of(dtype), device, g, scale=f * d1 ** -0.5)
                 for (d0, d1), f in zip(shapes, factor))


def oracle(inputs: list[tuple], **_):
    count = len(inputs[0])
    weights = [torch.cat([inp[i] for inp in inputs]).float() for i in range(count)]
    amax = torch.stack([w.abs().amax() for w in weights])
    scales = scales_from_amax(amax)
    codes = [to_fp8_bytes(w, scales[i]) for i, w in enumerate(weights)]
    return [(*(c.clone() for c in codes), scales.clone()) for _ in inputs]
