"""All-gather by NVSHMEM block puts from Triton, on PyTorch's NVSHMEM symmetric-memory backend.

The evaluator sets the symmetric-memory backend to NVSHMEM before this file loads (it declares BACKEND = "nvshmem").
Each rank copies its shard into a symmetric buffer; a Triton kernel puts every chunk of it into slot ``rank`` of
every rank's symmetric output (``nvshmemx_putmem_block`` through torch's Triton bindings), then waits for the puts
to complete; a one-program barrier kernel (each rank sets its flag on every peer to this call's epoch and waits for
every peer's) makes the data visible before the copy out, and a second one keeps the next call's puts from
landing while a peer still copies out. No NVLS: NVSHMEM_DISABLE_NVLS=1 stays set."""

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import torch.distributed._symmetric_memory._nvshmem_triton as nvshmem
import triton
import triton.language as tl
from torch.distributed._symmetric_memory._nvshmem_triton import requires_nvshmem

from problems.backends import nvshmem as nv

BACKEND = "nvshmem"
CHUNK = 1 << 16
# NVSHMEM's numbers, not those of torch's docstrings (problems/backends/nvshmem.py).
SIGNAL_SET = tl.constexpr(nv.SIGNAL_SET)
CMP_GE = tl.constexpr(nv.CMP_GE)


@requires_nvshmem
@triton.jit
def put_shard(dst, src, numel, rank, world, CHUNK: tl.constexpr):
    start = tl.program_id(0) * CHUNK
    n = tl.minimum(numel - start, CHUNK)
    for pe in range(world):
        nvshmem.put(dst + rank * numel + start, src + start, n, pe)
    nvshmem.quiet()


@requires_nvshmem
@triton.jit(do_not_specialize=["epoch"])
def flag_barrier(flags, rank, world, epoch):
    for pe in range(world):
        nvshmem.signal_op((flags + rank).to(tl.int64), epoch.to(tl.int64), SIGNAL_SET, pe)
    for pe in range(world):
        nvshmem.signal_wait_until(flags + pe, CMP_GE, epoch)


class _State:
    def __init__(self, x: torch.Tensor) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.numel = x.numel()
        self.src = symm_mem.empty(self.numel, dtype=x.dtype, device=x.device)
        self.out = symm_mem.empty(self.world * self.numel, dtype=x.dtype, device=x.device)
        self.flags = symm_mem.empty(self.world, dtype=torch.int64, device=x.device).zero_()
        if self.world > 1:  # one rank needs no peer addresses (and PyTorch's rendezvous wants two)
            for t in (self.src, self.out, self.flags):
                symm_mem.rendezvous(t, dist.group.WORLD.group_name)
        torch.cuda.synchronize(x.device)
        self.epoch = 1

    def barrier(self) -> None:
        self.epoch += 1
        flag_barrier[(1,)](self.flags, self.rank, self.world, self.epoch, num_warps=1)


_states = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _states:
        _states[key] = _State(x)
    st = _states[key]
    st.src.copy_(x.reshape(-1))
    put_shard[(triton.cdiv(st.numel, CHUNK),)](st.out, st.src, st.numel, st.rank, st.world, CHUNK=CHUNK)
    st.barrier()
    result = st.out.view(st.world * x.shape[0], *x.shape[1:]).clone()
    st.barrier()
    return result
