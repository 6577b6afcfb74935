"""A C++ extension built with torch.utils.cpp_extension.load_inline at import (in the set-up phase, into the
solution's own build cache), used for the copy; then the all-reduce. Builds slowly the first time."""

import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>

// Through ATen, so the same extension copies on the CPU and on a GPU (a memcpy of a CUDA tensor's pointer is a crash).
torch::Tensor arena_copy(torch::Tensor x) {
  auto out = torch::empty_like(x, at::MemoryFormat::Contiguous);
  out.copy_(x);
  return out;
}
"""

_ext = load_inline(
    name="arena_cpu_copy_ext", cpp_sources=_CPP, functions=["arena_copy"], extra_cflags=["-O2"], verbose=False
)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = _ext.arena_copy(x)
    dist.all_reduce(out)
    return out
