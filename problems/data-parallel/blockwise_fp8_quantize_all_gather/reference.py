"""DeepSeek-V3-style block-wise FP8 weights: each rank quantises its row shard with one scale per 128 x 128 block,
the codes and scale grids are all-gathered, and every rank dequantises the full weight."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, shared_generator

BLOCK = 128
FP8_MAX = 448.0


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 bytes of float8_e4m3fn codes [r, c] and float32 scales [r/128, c/128]; an all-zero block gets scale 1."""
    r, c = w.shape
    tiles = w.float().view(r // BLOCK, BLOCK, c // BLOCK, BLOCK)
    amax = tiles.abs().amax(dim=(1, 3), keepdim=True)
    # Tensor divisors keep both divisions IEEE float32 on every device.
    scale = torch.where(amax > 0, amax / torch.full_like(amax, FP8_MAX), torch.ones_like(amax))
    codes = (tiles / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
    return codes.view(r, c), scale.view(r // BLOCK, c // BLOCK)


def dequantize(codes: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    r, c = codes.shape
    tiles = codes.view(torch.float8_e4m3fn).float().view(r // BLOCK, BLOCK, c // BLOCK, BLOCK)
    return (tiles * scale.view(r // BLOCK, 1, c // BLOCK, 1)).view(r, c).to(dtype)


def solution(shard):
    world = dist.get_world_size()
    codes, scale = quantize(shard)
    all_codes = torch.empty((world * codes.shape[0], codes.shape[1]), dtype=torch.uint8, device=shard.device)
    all_scale = torch.empty((world * scale.shape[0], scale.shape[1]), dtype=scale.dtype, device=shard.device)
    dist.all_gather_into_tensor(all_codes, codes)
    dist.all_gather_into_tensor(all_scale, scale.contiguous())
    return dequantize(all_codes, all_scale, shard.dtype), all_scale


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, rows: int, cols: int):
    local = rows // world_size
    g = rank_generator(seed, rank, device)
    # Block magnitudes vary log-normally and a few elements are large outliers, as trained weights have.
    tiles = torch.randn((local // BLOCK, BLOCK, cols // BLOCK, BLOCK), generator=g, device=g.device)
    tiles *= torch.exp(0.5 * torch.randn((local // BLOCK, 1, cols // BLOCK, 1), generator=g, device=g.device))
    tiles *= torch.where(torch.rand(tiles.shape, generator=g, device=g.device) < 1e-3, 8.0, 1.0)
    base = float(torch.exp(torch.randn((), generator=shared_generator(seed))) * cols ** -0.5)
    return ((tiles * base).view(local, cols).to(device=device, dtype=dtype_of(dtype)),)


def oracle(inputs: list[tuple], **_):
    weight = torch.cat([inp[0] for inp in inputs])
    codes, scale = quantize(weight)
    out = dequantize(codes, scale, weight.dtype)
    return [(out.clone(), scale.clone()) for _ in inputs]
