"""What a ``BACKEND = "nvshmem"`` solution gets besides the backend itself: NVSHMEM's own numbers. Solutions import
it as ``evaluator.rank.backends.nvshmem``, the problems' known answers as ``problems.backends.nvshmem``: one definition.

NVSHMEM's device functions take their comparison and signal operation as integers, and the docstrings of PyTorch's
Triton bindings (``torch.distributed._symmetric_memory._nvshmem_triton``) list other numbers than NVSHMEM's headers
define: "GE (3)" is ``NVSHMEM_CMP_LE`` and "SIGNAL_SET (0)" is not a signal operation NVSHMEM defines. A barrier
written from those docstrings either passes before its peers arrive or never ends (on one H200 it never returned).
These are the values of NVSHMEM 3.4's headers (``enum nvshmemi_cmp_type`` in nvshmem_constants.h,
``nvshmemx_signal_op_t`` in nvshmem_common_transport.h); ``python benchmarks/backends_gpu.py OUTDIR`` records those
definitions beside them.

A Triton kernel may read a module-level value only as a ``tl.constexpr``: after
``from evaluator.rank.backends import nvshmem as nv``, wrap them where the kernel is defined,
``SIGNAL_SET = tl.constexpr(nv.SIGNAL_SET)``. Imports nothing: the web side and CPU tests load it."""

from __future__ import annotations

__all__ = ["CMP_EQ", "CMP_NE", "CMP_GT", "CMP_LE", "CMP_LT", "CMP_GE", "SIGNAL_SET", "SIGNAL_ADD"]

# enum nvshmemi_cmp_type: wait_until / signal_wait_until
CMP_EQ = 0
CMP_NE = 1
CMP_GT = 2
CMP_LE = 3
CMP_LT = 4
CMP_GE = 5

# nvshmemx_signal_op_t (NVSHMEMI_AMO_SIGNAL_SET / _ADD): signal_op / putmem_signal_block
SIGNAL_SET = 9
SIGNAL_ADD = 10
