"""Int8 block-quantised gradient all-reduce (ZeRO++ qgZ style): each rank quantises its gradient per block of 256
elements with scale = absmax / 127, the owner of each chunk sums every rank's dequantised codes in float32, and
the float32 averages are all-gathered."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator

BLOCK = 256


def quantize(grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """int8 codes and float32 scales, one scale per block; an all-zero block gets scale 0 and codes 0."""
    x = grad.float().view(-1, BLOCK)
    absmax = x.abs().amax(dim=1, keepdim=True)
    # A tensor divisor keeps both divisions IEEE float32 on every device (a Python-scalar divisor may become a
    # multiplication by the reciprocal, which rounds differently).
    scale = absmax / torch.full_like(absmax, 127.0)
    codes = torch.where(scale > 0, torch.round(x / scale), torch.zeros_like(x)).clamp_(-127, 127)
    return codes.to(torch.int8), scale.view(-1)


def solution(grad):
    world = dist.get_world_size()
    codes, scales = quantize(grad)
    recv_codes = torch.empty_like(codes)
    recv_scales = torch.empty_like(scales)
    dist.all_to_all_single(recv_codes, codes)
    dist.all_to_all_single(recv_scales, scales)
    values = recv_codes.float().view(world, -1, BLOCK) * recv_scales.view(world, -1, 1)
    mine = values.sum(dim=0).view(-1) / world
    out = torch.empty(grad.numel(), dtype=torch.float32, device=grad.device)
    dist.all_gather_into_tensor(out, mine)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    g = rank_generator(seed, rank, device)
    blocks = numel // BLOCK
    # Gradient magnitudes vary between blocks (layers, embeddings); some blocks are exactly zero (frozen).
    block_scale = torch.exp(0.5 * torch.randn((blocks, 1), generator=g, device=g.device))
    block_scale *= (torch.rand((blocks, 1), generator=g, device=g.device) > 1 / 64)
    x = torch.randn((blocks, BLOCK), generator=g, device=g.device) * block_scale
    return (x.view(-1).to(device=device, dtype=dtype_of(dtype)),)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    total = torch.zeros(inputs[0][0].numel(), dtype=torch.float64)
    for (grad,) in inputs:
        codes, scales = quantize(grad.cpu())
        total += (codes.double().view(-1, BLOCK) * scales.double().view(-1, 1)).view(-1)
    out = (total / world).float()
    return [out.clone() for _ in inputs]
