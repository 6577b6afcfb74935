"""Splits the cols/2+1 frequency columns as floor((cols/2+1)/W) per rank, silently dropping the leftover columns."""

import torch
import torch.distributed as dist


def solution(x, filt):
    w, r = dist.get_world_size(), dist.get_rank()
    channels, local_rows, cols = x.shape
    rows = local_rows * w
    half = cols // 2 + 1
    block = half // w
    z = torch.fft.rfft(x, dim=-1, norm="ortho")[..., : block * w]
    send = torch.view_as_real(z.reshape(channels, local_rows, w, block).permute(2, 0, 1, 3).contiguous())
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    cols_slab = torch.view_as_complex(recv).permute(1, 0, 2, 3).reshape(channels, rows, block)
    k = torch.view_as_complex(filt.contiguous())[:, :, r * block : (r + 1) * block]
    back = torch.fft.ifft(torch.fft.fft(cols_slab, dim=1, norm="ortho") * k, dim=1, norm="ortho")
    send = torch.view_as_real(back.reshape(channels, w, local_rows, block).transpose(0, 1).contiguous())
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    z = torch.view_as_complex(recv).permute(1, 2, 0, 3).reshape(channels, local_rows, w * block)
    return torch.fft.irfft(z, n=cols, dim=-1, norm="ortho")
