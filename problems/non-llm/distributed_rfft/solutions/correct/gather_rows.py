import torch
import torch.distributed as dist


def solution(x, filt):
    # No transpose: every rank all-gathers the whole field, filters it with full 2-D transforms, keeps its rows.
    w, r = dist.get_world_size(), dist.get_rank()
    channels, local_rows, cols = x.shape
    full = torch.empty((w * channels, local_rows, cols), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, x.contiguous())
    full = full.view(w, channels, local_rows, cols).permute(1, 0, 2, 3).reshape(channels, w * local_rows, cols)
    spec = torch.fft.rfft2(full, norm="ortho") * torch.view_as_complex(filt.contiguous())
    y = torch.fft.irfft2(spec, s=(w * local_rows, cols), norm="ortho")
    return y[:, r * local_rows : (r + 1) * local_rows].contiguous()
