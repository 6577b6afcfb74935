"""What travels between the host, the judge's ranks and the sandboxed ranks: JSON lines over pipes the host opened,
and tensors as files in the evaluation's exchange folder.

A tensor file holds a list of plain CPU tensors (or None for a non-tensor slot) written with ``torch.save`` and read
with ``torch.load(weights_only=True)``, whose restricted unpickler builds only tensors and plain containers: a file
written by solution code cannot run code, or produce a tensor subclass, in the judge that reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

MAX_LINE = 1 << 20  # a report longer than this is not ours


class Lines:
    """Reads JSON objects, one per line, from a non-blocking descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.closed = False
        os.set_blocking(fd, False)

    def read_available(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while not self.closed:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                self.closed = True
                break
            self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            out.append(message if isinstance(message, dict) else {"kind": "garbled", "raw": line[:200].decode(
                "utf-8", "replace")})
        if len(self.buffer) > MAX_LINE:
            out.append({"kind": "garbled", "raw": "a line longer than the channel allows"})
            self.buffer = b""
        return out


def send(fd: int, kind: str, **payload: Any) -> None:
    data = (json.dumps({"kind": kind, **payload}, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def save_tensors(path: Path, values: list[Any]) -> None:
    """Writes ``values`` (tensors on any device, or other objects stored as None) atomically."""
    import torch

    plain = [v.detach().to("cpu").clone() if isinstance(v, torch.Tensor) else None for v in values]
    partial = path.with_name(path.name + ".part")
    torch.save(plain, partial)
    os.replace(partial, path)


def load_tensors(path: Path) -> list[Any]:
    import torch

    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, list):
        raise ValueError(f"{path.name} does not hold a list")
    return data
