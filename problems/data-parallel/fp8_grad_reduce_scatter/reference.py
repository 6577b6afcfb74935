"""FP8 gradient reduce-scatter: each rank quantises its gradient to float8_e4m3fn per 128-element block, the codes
and scales of chunk r go to rank r, which dequantises every rank's copy, averages them in fp32 and adds the average
to its fp32 gradient shard."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator

BLOCK = 128
FP8_MAX = 448.0


def quantize(grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float8_e4m3fn codes (as uint8 bytes) and one float32 scale per block; an all-zero block gets scale 1."""
    x = grad.float().view(-1, BLOCK)
    amax = x.abs().amax(dim=1, keepdim=True)
    # Tensor divisors keep both divisions IEEE float32 on every device.
    scale = torch.where(amax > 0, amax / torch.full_like(amax, FP8_MAX), torch.ones_like(amax))
    codes = (x / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return codes.view(torch.uint8).view(-1), scale.view(-1)


def dequantize(codes: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return (codes.view(torch.float8_e4m3fn).float().view(-1, BLOCK) * scale.view(-1, 1)).view(-1)


def solution(grad, main_grad):
    world = dist.get_world_size()
    codes, scales = quantize(grad)
    recv_codes, recv_scales = torch.empty_like(codes), torch.empty_like(scales)
    dist.all_to_all_single(recv_codes, codes)
    dist.all_to_all_single(recv_scales, scales)
    values = dequantize(recv_codes, recv_scales).view(world, -1)
    return main_grad + values.sum(dim=0) / world


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    g = rank_generator(seed, rank, device)
    blocks = numel // BLOCK
    # Block magnitudes vary log-normally; about one block in 64 is exactly zero (a frozen or unused slice).
    block_scale = torch.exp(0.7 * torch.randn((blocks, 1), generator=g, device=g.device))
    block_scale *= (torch.rand((blocks, 1), generator=g, device=g.device) > 1 / 64)
    grad = (torch.randn((blocks, BLOCK), generator=g, device=g.device) * block_scale).view(-1)
    main_grad = torch.randn((numel // world_size,), generator=g, device=g.device)
    return grad.to(device=device, dtype=dtype_of(dtype)), main_grad.to(device)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    total = sum(dequantize(*quantize(grad.cpu())).double() for grad, _ in inputs) / world
    chunks = total.chunk(world)
    return [(main_grad.double() + chunks[r]).float() for r, (_, main_grad) in enumerate(inputs)]
