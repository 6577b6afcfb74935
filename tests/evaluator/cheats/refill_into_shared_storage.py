"""Class: the harness's refill carries the communication. Re-points its input's storage (``Tensor.set_``) at a file
every rank maps, once per call, hoping the evaluator refills the same tensor in place before its clock starts next
time: the untimed refill would then put every rank's inputs where every rank reads them, and the all-reduce becomes
a local sum. Each call now gets inputs in storage allocated for it alone, and an input that no longer owns its
storage after the call is refused, naming it."""

import mmap
import os

import torch
import torch.distributed as dist

_maps: dict[int, torch.Tensor] = {}


def _shared(rank: int, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if device.type != "cpu":  # a buffer of its own on the device (peers would map it by CUDA IPC)
        return _maps.setdefault(rank, torch.empty(numel, dtype=dtype, device=device))
    if rank not in _maps:
        path = f"/tmp/arena-shared-{rank}"
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        os.ftruncate(fd, nbytes)
        _maps[rank] = torch.frombuffer(mmap.mmap(fd, nbytes), dtype=dtype)
    return _maps[rank]


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    shared = _shared(dist.get_rank(), x.numel(), x.dtype, x.device)
    shared.copy_(x.reshape(-1))
    x.set_(shared.untyped_storage(), 0, x.shape)  # the next refill would land in the shared file
    return out
