"""What travels between the host, the judge's ranks and the sandboxed ranks: JSON lines over pipes the host opened,
and tensors as files in the evaluation's exchange folder.

A tensor file holds a list of plain CPU tensors (or None for a non-tensor slot, or a nested list of them) as raw
bytes behind a JSON header that says each tensor's dtype, shape and offset. Reading checks the header against the
file's size and builds plain tensors from the bytes; there is no unpickler, so a file written by solution code
cannot run code, or produce a tensor subclass, in the judge that reads it."""

from __future__ import annotations

import ctypes
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


HEADER_MAX = 1 << 20
ALIGN = 64
_MAGIC = b"ARNT0001"


def _dtypes() -> dict[str, Any]:
    import torch

    return {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


class Staging:
    """One host buffer a process reuses for the tensor files of every timed iteration: page-locked where a GPU is
    used, so copies to and from the device run at full speed, and allocated once, so no iteration pays for fresh
    pages (a cost that differs from process to process and would tilt the host clock's comparison). Tensors read
    through it are views of it, valid until its next use: copy them (to the device) before that."""

    def __init__(self, pinned: bool) -> None:
        self.pinned = pinned
        self.buffer: Any = None

    def take(self, nbytes: int) -> Any:
        import torch

        if self.buffer is None or self.buffer.numel() < nbytes:
            size = max(nbytes, 2 * (self.buffer.numel() if self.buffer is not None else 0), 1 << 20)
            self.buffer = None
            self.buffer = torch.empty(size, dtype=torch.uint8, pin_memory=self.pinned)
        return self.buffer


def _bytes_of(t: Any) -> memoryview:
    """A contiguous CPU tensor's own bytes, writable, through its pointer: nothing beyond torch is needed, and the
    tensor must stay alive while the view is used."""
    n = t.numel() * t.element_size()
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B") if n else memoryview(bytearray())


def _padded(nbytes: int) -> int:
    return nbytes + (-nbytes) % ALIGN


def _layout(values: list[Any]) -> tuple[bytes, list[tuple[Any, int, int]], int]:
    """The file's header; per tensor, (tensor, offset, bytes) with the offset from the start of the data; and the
    data's size, padding included."""
    import torch

    parts: list[tuple[Any, int, int]] = []
    offset = 0

    def entry(v: Any) -> Any:
        nonlocal offset
        if isinstance(v, list):
            return [entry(x) for x in v]
        if not isinstance(v, torch.Tensor):
            return None
        t = v.detach()
        nbytes = t.numel() * t.element_size()
        meta = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "offset": offset,
                "nbytes": nbytes}
        parts.append((t, offset, nbytes))
        offset += _padded(nbytes)
        return meta

    header = json.dumps({"values": [entry(v) for v in values]}).encode()
    return header, parts, offset


def _prefix(header: bytes) -> bytes:
    head = _MAGIC + len(header).to_bytes(8, "little") + header
    return head + b"\0" * (_padded(len(head)) - len(head))


def save_tensors(path: Path, values: list[Any], staging: Staging | None = None) -> None:
    """Writes ``values`` — tensors on any device (copied to the CPU), other objects as None, or lists of those one
    level deep — atomically, as raw bytes behind a JSON header: no pickle, so reading runs no code. With
    ``staging``, the bytes are gathered in its buffer (one copy from the device) and written from there."""
    header, parts, total = _layout(values)
    partial = path.with_name(path.name + ".part")
    with open(partial, "wb") as f:
        f.write(_prefix(header))
        if staging is not None:
            buf = staging.take(total)
            for t, off, n in parts:
                if n:
                    buf[off:off + n].view(t.dtype).view(t.shape).copy_(t)
                # The padding too: the buffer holds whatever this process staged before, which is not for the reader.
                buf[off + n:off + _padded(n)].zero_()
            f.write(_bytes_of(buf)[:total])
        else:
            for t, off, n in parts:
                c = t.to("cpu").contiguous()
                f.write(_bytes_of(c))
                f.write(b"\0" * (_padded(n) - n))
                del c
    os.replace(partial, path)


def save_call(path: Path, outputs: list[Any], inputs_after: list[Any], staging: Staging | None = None) -> None:
    """One call's tensor file, as the judge reads it back: its outputs, then its inputs as they were after the call
    (non-tensor slots as None)."""
    import torch

    save_tensors(path, [[o if type(o) is torch.Tensor else None for o in outputs],
                        [o if type(o) is torch.Tensor else None for o in inputs_after]], staging)


def load_tensors(path: Path, staging: Staging | None = None) -> list[Any]:
    """Reads what :func:`save_tensors` wrote, checking every field: a file written by solution code yields plain
    CPU tensors, Nones and lists, or a ValueError. With ``staging`` the file is read into its buffer and the
    tensors are views of it (see :class:`Staging`)."""
    import torch

    with open(path, "rb") as f:
        length = os.fstat(f.fileno()).st_size
        whole = staging.take(length) if staging is not None else torch.empty(length, dtype=torch.uint8)
        data = _bytes_of(whole)[:length]
        got = f.readinto(data)
    if got != length:
        raise ValueError(f"{Path(path).name} changed size while it was read")
    if len(data) < 16 or data[:8] != _MAGIC:
        raise ValueError(f"{Path(path).name} is not a tensor file of the evaluator")
    size = int.from_bytes(data[8:16], "little")
    if size > HEADER_MAX or 16 + size > len(data):
        raise ValueError(f"{Path(path).name} has a header of {size} bytes")
    header = json.loads(bytes(data[16:16 + size]))
    base = _padded(16 + size)
    dtypes = _dtypes()

    def value(meta: Any, depth: int) -> Any:
        if meta is None:
            return None
        if isinstance(meta, list) and depth == 0:
            return [value(m, 1) for m in meta]
        if not isinstance(meta, dict) or meta.get("dtype") not in dtypes:
            raise ValueError("a tensor entry with no known dtype")
        dtype, shape = dtypes[meta["dtype"]], meta.get("shape")
        offset, nbytes = meta.get("offset"), meta.get("nbytes")
        if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)
                and isinstance(offset, int) and isinstance(nbytes, int) and offset >= 0):
            raise ValueError("a tensor entry with a bad shape or offset")
        count = 1
        for n in shape:
            count *= n
        if count * torch.empty((), dtype=dtype).element_size() != nbytes or base + offset + nbytes > len(data):
            raise ValueError("a tensor entry whose size does not match its shape")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        return whole[base + offset:base + offset + nbytes].view(dtype).reshape(shape)

    values = header.get("values") if isinstance(header, dict) else None
    if not isinstance(values, list):
        raise ValueError(f"{Path(path).name} does not hold a list")
    return [value(v, 0) for v in values]
