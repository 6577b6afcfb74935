"""A 3x3x3 video convolution split over its input channels (a row-parallel convolution, as a tensor-parallel video
VAE decoder runs it): each rank convolves its slice of the input channels with the matching slice of the weight, the
partial outputs are summed over ranks by an all-reduce, and the bias is added once."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    partial = F.conv3d(x, weight, None, stride=1, padding=1).float()
    dist.all_reduce(partial)  # sums the input-channel slices' contributions
    return (partial + bias.float().view(1, -1, 1, 1, 1)).to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int,
                channels_in: int, channels_out: int, frames: int, height: int, width: int):
    dt = dtype_of(dtype)
    local = channels_in // world_size
    bias = randn((channels_out,), dt, device, shared_generator(seed, device), scale=0.5)
    g = rank_generator(seed, rank, device)
    x = randn((batch, local, frames, height, width), dt, device, g)
    # Scaled by the full fan-in, so the summed output is O(1).
    weight = randn((channels_out, local, 3, 3, 3), dt, device, g, scale=(27 * channels_in) ** -0.5)
    return x, weight, bias


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    x = torch.cat([inp[0] for inp in inputs], dim=1).double()
    weight = torch.cat([inp[1] for inp in inputs], dim=1).double()
    out = F.conv3d(x, weight, inputs[0][2].double(), stride=1, padding=1).to(dt)
    return [out.clone() for _ in inputs]
