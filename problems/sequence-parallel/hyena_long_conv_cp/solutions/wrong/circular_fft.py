"""Wrong: FFT convolution without zero padding (length S), so the product is circular and late inputs wrap around
into early outputs."""

import torch
import torch.distributed as dist


def solution(u, h):
    w, r = dist.get_world_size(), dist.get_rank()
    n_local, channels = u.shape
    seq, cl = w * n_local, channels // w
    send = u.view(n_local, w, cl).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    full = recv.view(seq, cl)
    spec = torch.fft.rfft(full, dim=0) * torch.fft.rfft(h[:, r * cl : (r + 1) * cl], dim=0)
    y = torch.fft.irfft(spec, n=seq, dim=0)
    send = y.reshape(w, n_local, cl).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.permute(1, 0, 2).reshape(n_local, channels).to(u.dtype)
