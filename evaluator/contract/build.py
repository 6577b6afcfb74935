"""What the portal needs to know about a solution's build before queueing it."""

from __future__ import annotations


def needs_build(source: str) -> bool:
    """A solution that compiles a CUDA/C++ extension: its build is queued ahead of its GPU job."""
    return "load_inline" in source or "cpp_extension" in source
