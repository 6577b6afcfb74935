"""The reference, in a rank that holds a second CUDA context, as the judge holds its gates' (README.md beside)."""

import ctypes

import torch
import torch.distributed as dist

# The reference, in a process that also holds a second CUDA context of its own (as the judge's holds its gates').
_cuda = ctypes.CDLL("libcuda.so.1")
_ctx = ctypes.c_void_p()
_dev = ctypes.c_int()
torch.cuda.init()
assert _cuda.cuDeviceGet(ctypes.byref(_dev), torch.cuda.current_device()) == 0
assert _cuda.cuCtxCreate_v2(ctypes.byref(_ctx), 0, _dev) == 0
_popped = ctypes.c_void_p()
assert _cuda.cuCtxPopCurrent_v2(ctypes.byref(_popped)) == 0


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out
