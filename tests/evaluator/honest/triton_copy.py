"""Does its local work in a Triton kernel (JIT-compiled on first call: a build in a subprocess, a kernel cache under
the solution's own directory), then reduces with NCCL. Triton's compile and launch path must pass the sandbox."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _copy_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096)
    dist.all_reduce(out)
    return out
