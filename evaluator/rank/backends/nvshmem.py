"""NVSHMEM's own numbers for ``BACKEND = "nvshmem"`` solutions (docs/backends/nvshmem.md), under their public name; the
definition and its reasons are ``problems/backends/nvshmem.py``."""

from __future__ import annotations

from problems.backends.nvshmem import *  # noqa: F403  (everything the definition exports: its __all__)
from problems.backends.nvshmem import __all__  # noqa: F401
