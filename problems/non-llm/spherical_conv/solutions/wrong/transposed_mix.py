"""Mixes channels with the transpose of each degree's matrix (Wt[l, c_out, c_in] instead of Wt[l, c_in, c_out])."""

import torch
import torch.distributed as dist


def solution(x, leg_fwd, leg_inv, weight):
    channels, _, nlon = x.shape
    modes = leg_fwd.shape[0]
    xm = torch.fft.rfft(x, dim=-1, norm="forward")[..., :modes]
    a = torch.view_as_real(torch.einsum("mlj,cjm->clm", leg_fwd.to(torch.complex64), xm)).contiguous()
    dist.all_reduce(a)
    b = torch.einsum("clm,loc->olm", torch.view_as_complex(a), torch.view_as_complex(weight.contiguous()))
    ym = torch.einsum("mlj,olm->ojm", leg_inv.to(torch.complex64), b)
    ym[..., 0] = ym[..., 0].real
    ym = torch.nn.functional.pad(ym, (0, nlon // 2 + 1 - modes))
    return torch.fft.irfft(ym, n=nlon, dim=-1, norm="forward")
