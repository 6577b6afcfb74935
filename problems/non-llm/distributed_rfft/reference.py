"""Global spectral filter on a row-sharded real 2-D field, through a slab-decomposed rfft2 / irfft2.

Rank r holds rows [r*rows/W, (r+1)*rows/W) of every channel. Real FFTs along the columns are local; an all-to-all
transposes the half-spectrum so each rank holds whole columns of frequencies, where the FFT along the rows runs, the
filter is applied and the inverse row FFT runs; a second all-to-all returns to row slabs for the inverse real FFT."""

import torch
import torch.distributed as dist

from problems.common import rank_generator, randn, shared_generator


def solution(x: torch.Tensor, filt: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    channels, local_rows, cols = x.shape
    rows = local_rows * w
    half = cols // 2 + 1
    block = -(-half // w)  # frequency columns per rank; the last rank's block is partly padding
    z = torch.fft.rfft(x, dim=-1, norm="ortho")
    z = torch.nn.functional.pad(z, (0, block * w - half))
    send = torch.view_as_real(z.view(channels, local_rows, w, block).permute(2, 0, 1, 3).contiguous())
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # recv[s]: rank s's rows of my frequency columns
    cols_slab = torch.view_as_complex(recv).permute(1, 0, 2, 3).reshape(channels, rows, block)
    k = torch.view_as_complex(filt.contiguous())[:, :, r * block:(r + 1) * block]
    spec = torch.fft.fft(cols_slab, dim=1, norm="ortho")[:, :, :k.shape[2]] * k
    spec = torch.nn.functional.pad(spec, (0, block - k.shape[2]))
    back = torch.fft.ifft(spec, dim=1, norm="ortho")
    send = torch.view_as_real(back.view(channels, w, local_rows, block).transpose(0, 1).contiguous())
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # recv[s]: frequency block s of my rows
    z = torch.view_as_complex(recv).permute(1, 2, 0, 3).reshape(channels, local_rows, w * block)[..., :half]
    return torch.fft.irfft(z, n=cols, dim=-1, norm="ortho")


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                channels: int, rows: int, cols: int):
    half = cols // 2 + 1
    filt = randn((channels, rows, half, 2), torch.float32, device, shared_generator(seed, device))
    # Columns 0 and cols/2 of a real field's half-spectrum are Hermitian along the rows; keep the filter so too,
    # so the filtered spectrum is still that of a real field and the inverse real FFT is unambiguous.
    k = torch.view_as_complex(filt)
    neg = (-torch.arange(rows, device=device)) % rows
    for c in (0, cols // 2):
        k[:, :, c] = (k[:, :, c] + k[:, neg, c].conj()) / 2
    x = randn((channels, rows // world_size, cols), torch.float32, device, rank_generator(seed, rank, device))
    return (x, filt)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    full = torch.cat([inp[0] for inp in inputs], dim=1).double()
    k = torch.view_as_complex(inputs[0][1].double().contiguous())
    y = torch.fft.irfft2(torch.fft.rfft2(full, norm="ortho") * k, s=full.shape[1:], norm="ortho")
    return [block.float().contiguous() for block in y.chunk(w, dim=1)]
