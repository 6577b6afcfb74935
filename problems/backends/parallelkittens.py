"""ParallelKittens without NVLink multicast: what a ``BACKEND = "parallelkittens"`` solution gets. Solutions import it
as ``evaluator.rank.backends.parallelkittens``, the problems' known answers as ``problems.backends.parallelkittens``:
one definition.

- :func:`kittens_flags`, :func:`include_paths` and :func:`load`: the ThunderKittens headers of this host
  (``ARENA_THUNDERKITTENS``, bound read-only into the sandbox) and the flags they need for an H200 (``sm_90a``);
- :class:`ParallelTensor`: one buffer per rank, allocated by PyTorch's symmetric memory (CUDA backend) and
  exchanged by its rendezvous, so every rank holds every peer's pointer: what a ThunderKittens parallel layout
  ``pgl<gl<...>, WORLD, false>`` is built from (multicast off: the layout's third parameter must be ``false``);
- barriers by per-peer signal and wait on the symmetric-memory signal pads: :meth:`ParallelTensor.barrier` from the
  host (a kernel on the current stream), and :data:`DEVICE_BARRIER`, CUDA source for the same inside a kernel.

ThunderKittens' own multi-GPU barrier type and its parallel kernels use multicast, which the shared GPU hosts
forbid; the static check refuses them there (docs/backends/parallelkittens.md). Imports torch lazily: the web side
and CPU tests may import this module without a GPU."""

from __future__ import annotations

import os
from typing import Any, Sequence

__all__ = [
    "ENV",
    "ARCH",
    "FLAGS",
    "UNDEFINES",
    "HOST_CHANNEL",
    "KittensUnavailable",
    "kittens_root",
    "include_paths",
    "kittens_flags",
    "load",
    "ParallelTensor",
    "DEVICE_BARRIER",
]

ENV = "ARENA_THUNDERKITTENS"
ARCH = "sm_90a"
FLAGS = ("-std=c++20", "-DKITTENS_HOPPER", "--expt-relaxed-constexpr", "--expt-extended-lambda")
# PyTorch's extension builds define these; ThunderKittens needs the half/bf16 operators and conversions back.
UNDEFINES = (
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-U__CUDA_NO_BFLOAT16_OPERATORS__",
)
# Channel 0 of the signal pads belongs to host-side barriers (ParallelTensor.barrier); kernels use 1 and up.
HOST_CHANNEL = 0


class KittensUnavailable(RuntimeError):
    """This host has no ThunderKittens checkout where ARENA_THUNDERKITTENS says."""


def kittens_root() -> str:
    """The ThunderKittens checkout: the folder holding ``include/kittens.cuh``."""
    root = os.environ.get(ENV)
    if not root or not os.path.isfile(os.path.join(root, "include", "kittens.cuh")):
        raise KittensUnavailable(
            f"{ENV} is {root!r}: no ThunderKittens checkout (include/kittens.cuh) there; the "
            f"GPU host's set-up installs one (docs/backends/parallelkittens.md)"
        )
    return root


def include_paths() -> list[str]:
    return [os.path.join(kittens_root(), "include")]


def kittens_flags(world_size: int | None = None) -> list[str]:
    """nvcc flags for a ThunderKittens kernel on an H200: C++20, Hopper, the headers, and ``sm_90a`` only (an arch
    flag here keeps PyTorch from adding its own). ``world_size`` adds ``-DARENA_WORLD=<n>`` for kernels templated
    on the number of devices (a parallel layout's device count is a compile-time constant)."""
    flags = [*FLAGS, *UNDEFINES, f"-I{include_paths()[0]}", f"-gencode=arch=compute_90a,code={ARCH}", "-O3"]
    if world_size is not None:
        flags.append(f"-DARENA_WORLD={int(world_size)}")
    return flags


def load(
    name: str,
    cpp_sources: str | Sequence[str],
    cuda_sources: str | Sequence[str],
    functions: Sequence[str],
    world_size: int | None = None,
    extra_cuda_cflags: Sequence[str] = (),
    **kwargs: Any,
) -> Any:
    """``torch.utils.cpp_extension.load_inline`` with :func:`kittens_flags`; the module name carries the world size
    so builds for different device counts never share a cache entry."""
    from torch.utils.cpp_extension import load_inline

    suffix = f"_w{int(world_size)}" if world_size is not None else ""
    return load_inline(
        name=name + suffix,
        cpp_sources=cpp_sources,
        cuda_sources=cuda_sources,
        functions=list(functions),
        extra_cuda_cflags=kittens_flags(world_size) + list(extra_cuda_cflags),
        extra_include_paths=include_paths(),
        **kwargs,
    )


class ParallelTensor:
    """A ``shape``/``dtype`` buffer on every rank of ``group``, in symmetric memory, with every peer's address.

    ``local``: this rank's buffer (a tensor); ``peer(r)``: rank r's buffer as a tensor this rank may read and write
    over NVLink; ``ptrs``: the buffers' addresses in rank order (host ints, for a ``pgl``'s pointer array);
    ``ptrs_dev``: the device address of that array; ``signal_pads_dev``: the device address of the array of
    signal-pad pointers, for :data:`DEVICE_BARRIER`; ``channels``: how many barrier channels the pads hold."""

    def __init__(self, shape: Sequence[int], dtype: Any, group: Any = None, device: Any = None) -> None:
        import torch
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        self.group = group or dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        self.world_size = dist.get_world_size(self.group)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        device = device if device is not None else torch.device("cuda", torch.cuda.current_device())
        self.local = symm_mem.empty(self.shape, dtype=dtype, device=device)
        self.handle = symm_mem.rendezvous(self.local, self.group.group_name)
        self.ptrs = [int(p) for p in self.handle.buffer_ptrs]
        self.ptrs_dev = int(self.handle.buffer_ptrs_dev)
        self.signal_pads_dev = int(self.handle.signal_pad_ptrs_dev)
        pad_bytes = int(getattr(self.handle, "signal_pad_size", 2048))
        self.channels = pad_bytes // 4 // self.world_size

    def peer(self, rank: int) -> Any:
        return self.handle.get_buffer(rank, self.shape, self.dtype)

    def barrier(self, channel: int = HOST_CHANNEL) -> None:
        """Every rank waits until every rank got here, on the current stream: each rank signals each peer's pad and
        waits for each peer's signal on its own (release/acquire at system scope). Work queued before it on every
        rank is visible to work queued after it."""
        self.handle.barrier(channel=channel)


# In-kernel barrier over the signal pads, laid out as PyTorch's own barrier lays them (slot ``world * channel +
# rank`` of each pad), so host and device barriers may share the pads on different channels. Call
# ``arena_pk::barrier(pads, rank, world, channel)`` from every thread of a block (threads 0..world-1 signal and wait);
# blocks of the same index on every rank meet on the same channel, so a grid uses at most ``channels - 1`` blocks
# (channel 0 is the host's). ``pads`` is ParallelTensor.signal_pads_dev cast to ``uint32_t**``.
DEVICE_BARRIER = r"""
#include <cstdint>
#include <cuda/atomic>
namespace arena_pk {
__device__ __forceinline__ void put_signal(uint32_t* slot) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ref(*slot);
    uint32_t expected = 0;
    while (!ref.compare_exchange_strong(expected, 1u, cuda::std::memory_order_release,
                                        cuda::std::memory_order_relaxed)) {
        expected = 0;
    }
}
__device__ __forceinline__ void wait_signal(uint32_t* slot) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ref(*slot);
    uint32_t expected = 1;
    while (!ref.compare_exchange_strong(expected, 0u, cuda::std::memory_order_acquire,
                                        cuda::std::memory_order_relaxed)) {
        expected = 1;
    }
}
// Every rank's block meets this rank's block of the same index: what each block wrote before is visible to the
// peers' blocks after, and what they read before is done.
__device__ __forceinline__ void barrier(uint32_t** pads, int rank, int world, int channel) {
    __syncthreads();
    const int peer = threadIdx.x;
    if (peer < world) {
        __threadfence_system();
        put_signal(pads[peer] + world * channel + rank);
        wait_signal(pads[rank] + world * channel + peer);
    }
    __syncthreads();
}
}  // namespace arena_pk
"""
