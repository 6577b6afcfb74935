"""As aligned_buffer.py, 1 MiB past a 2 MiB boundary: the output spans one more page (README.md beside)."""

import torch
import torch.distributed as dist

_buf = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    # As aligned_buffer.py, at an offset of 1 MiB into the buffer: the output spans one more 2 MiB page.
    key = (x.numel(), x.dtype)
    if key not in _buf:
        _buf[key] = torch.empty(x.numel() + (1 << 21), dtype=x.dtype, device=x.device)
    off = (1 << 20) // x.element_size()
    out = _buf[key][off : off + x.numel()]
    out.copy_(x)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out.clone()
