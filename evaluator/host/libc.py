"""The C library, reached through ctypes for the few system calls Python's os module lacks (mount, umount2, kcmp)."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def libc() -> ctypes.CDLL:
    """The process's C library, errno kept for ctypes.get_errno()."""
    return ctypes.CDLL(None, use_errno=True)
