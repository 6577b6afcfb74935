"""A CPU C++ extension built with torch.utils.cpp_extension.load_inline at import (in the set-up phase, into the
solution's own build cache), used for the copy; then the all-reduce. Builds slowly the first time."""

import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>
#include <cstring>

torch::Tensor arena_copy(torch::Tensor x) {
  auto src = x.contiguous();
  auto out = torch::empty_like(src);
  std::memcpy(out.data_ptr(), src.data_ptr(), src.numel() * src.element_size());
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
