"""Known wrong: the NVSHMEM broadcast of solutions/correct/root_puts_nvshmem.py launched with one program too few,
so the last chunk of the tensor never reaches any rank (their outputs keep zeros there, at one rank too). It must
get ``wrong_output``."""

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
def put_all(dst, src, numel, world, CHUNK: tl.constexpr):
    start = tl.program_id(0) * CHUNK
    n = tl.minimum(numel - start, CHUNK)
    for pe in range(world):
        nvshmem.put(dst + start, src + start, n, pe)
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
        self.out = symm_mem.empty(self.numel, dtype=x.dtype, device=x.device).zero_()
        self.flags = symm_mem.empty(self.world, dtype=torch.int64, device=x.device).zero_()
        if self.world > 1:  # one rank needs no peer addresses (and PyTorch's rendezvous wants two)
            for t in (self.src, self.out, self.flags):
                symm_mem.rendezvous(t, dist.group.WORLD.group_name)
        torch.cuda.synchronize(x.device)
        self.epoch = 1
        self.programs = max(1, triton.cdiv(self.numel, CHUNK) - 1)  # one short: the tail is never sent

    def barrier(self) -> None:
        self.epoch += 1
        flag_barrier[(1,)](self.flags, self.rank, self.world, self.epoch, num_warps=1)


_states = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _states:
        _states[key] = _State(x)
    st = _states[key]
    if st.rank == 0:
        st.src.copy_(x.reshape(-1))
        put_all[(st.programs,)](st.out, st.src, st.numel, st.world, CHUNK=CHUNK)
    st.barrier()
    result = st.out.view(x.shape).clone()
    st.barrier()
    return result
