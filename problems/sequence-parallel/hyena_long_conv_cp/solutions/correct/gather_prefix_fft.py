"""All-gathers the input and convolves only the prefix this rank's outputs depend on, over every channel, with an
FFT of length 2 * (r + 1) * S/W: no all-to-all, more work on later ranks."""

import torch
import torch.distributed as dist


def solution(u, h):
    w, r = dist.get_world_size(), dist.get_rank()
    n_local, channels = u.shape
    full = torch.empty((w * n_local, channels), dtype=u.dtype, device=u.device)
    dist.all_gather_into_tensor(full, u.contiguous())
    m = (r + 1) * n_local
    n = 2 * m
    spec = torch.fft.rfft(full[:m], n=n, dim=0) * torch.fft.rfft(h[:m], n=n, dim=0)
    return torch.fft.irfft(spec, n=n, dim=0)[r * n_local : m].to(u.dtype).contiguous()
