"""How the site writes a number of bytes for people, in every message (uploads, archives, request limits)."""

from __future__ import annotations

KiB = 1024
MiB = 1024 * KiB


def size(n: int) -> str:
    """``812 bytes``, ``64 KiB``, ``1.5 KiB``, ``20 MiB`` (one decimal, dropped when it is 0)."""
    if n >= MiB:
        return f"{n / MiB:.1f} MiB".replace(".0 MiB", " MiB")
    if n >= KiB:
        return f"{n / KiB:.1f} KiB".replace(".0 KiB", " KiB")
    return f"{n} bytes"
