"""Slab-decomposed 2-D FFT: each rank FFTs its own rows, an all-to-all transposes the array so each rank holds a
slab of columns, then each rank FFTs those columns. The result stays transposed, as FFTW_MPI_TRANSPOSED_OUT."""

import torch
import torch.distributed as dist

from problems.common import rank_generator, randn


def solution(x):
    world = dist.get_world_size()
    local_rows, cols = x.shape[0], x.shape[1]
    z = torch.fft.fft(torch.view_as_complex(x.contiguous()), dim=1, norm="ortho")
    # Block d of columns goes to rank d; complex values travel as float32 pairs.
    send = torch.view_as_real(z.view(local_rows, world, cols // world).transpose(0, 1).contiguous())
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    cols_slab = torch.view_as_complex(recv).reshape(world * local_rows, cols // world).t()
    return torch.view_as_real(torch.fft.fft(cols_slab, dim=1, norm="ortho")).contiguous()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, rows: int, cols: int):
    g = rank_generator(seed, rank, device)
    return (randn((rows // world_size, cols, 2), torch.float32, device, g),)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    full = torch.view_as_complex(torch.cat([inp[0].double() for inp in inputs]))
    spectrum = torch.fft.fft2(full, norm="ortho")
    return [torch.view_as_real(block.t().contiguous()).float() for block in spectrum.chunk(world, dim=1)]
