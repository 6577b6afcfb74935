"""A CUDA extension built with load_inline (a vectorised copy kernel), then NCCL's all-reduce: exercises the
compile cache. The build happens at import, in the set-up phase."""

import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <cuda_bf16.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) dst[i] = src[i];
}

torch::Tensor arena_copy(torch::Tensor x) {
  auto out = torch::empty_like(x);
  long bytes = x.numel() * x.element_size();
  TORCH_CHECK(bytes % 16 == 0, "size must be a multiple of 16 bytes");
  long n = bytes / 16;
  int threads = 256;
  int blocks = (int)std::min<long>((n + threads - 1) / threads, 1024);
  copy_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      (const uint4*)x.data_ptr(), (uint4*)out.data_ptr(), n);
  return out;
}
"""

_ext = load_inline(
    name="arena_copy_ext",
    cpp_sources="torch::Tensor arena_copy(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["arena_copy"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = _ext.arena_copy(x)
    dist.all_reduce(out)
    return out
