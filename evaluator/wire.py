"""What travels between the host, the judge's ranks and the sandboxed ranks: JSON lines over pipes the host opened,
and tensors as files in the evaluation's folder (slots, :class:`Slot`, for the timed iterations).

A tensor file holds a list of plain CPU tensors (or None for a non-tensor slot, or a nested list of them) as raw
bytes behind a JSON header that says each tensor's dtype, shape and offset. Reading checks the header against the
file's size and builds plain tensors from the bytes; there is no unpickler, so a file written by solution code
cannot run code, or produce a tensor subclass, in the judge that reads it."""

from __future__ import annotations

import ctypes
import json
import math
import mmap
import os
import stat
import struct
from pathlib import Path
from typing import Any

MAX_LINE = 1 << 20  # a report longer than this is not ours
MAX_TOTAL = 64 << 20  # nor this much of them: a rank sends a few hundred bytes a call
_STATFS = ctypes.c_char * 256  # struct statfs; f_type is its first field, a long
_LONG = ctypes.sizeof(ctypes.c_long)
_fstatfs = ctypes.CDLL(None, use_errno=True).fstatfs


def result_tuple_types() -> frozenset[type]:
    """torch's own named result tuples (``torch.topk``, ``torch.sort``, ``torch.max(dim=...)``): C types. Read
    before any solution code runs, so a class of the solution's that merely claims their module is not one."""
    import torch

    found = (getattr(torch.return_types, n) for n in dir(torch.return_types))
    return frozenset(t for t in found if isinstance(t, type) and issubclass(t, tuple))


def outputs_of(out: Any, result_tuples: frozenset[type]) -> list[Any]:
    """A call's result as its outputs: a plain tuple or list, or one of ``result_tuples``, holds several; anything
    else is one output. Exact types only: iterating anything else would run the solution's own code (its
    ``__iter__``) after the timer stopped, where the work it defers is never timed."""
    kind = type(out)
    return list(out) if kind is tuple or kind is list or kind in result_tuples else [out]


class Lines:
    """Reads JSON objects, one per line, from a non-blocking descriptor. The other end may be solution code: a line
    that is not a JSON object (nested past the parser's depth, say) comes back as a "garbled" report, and a flood
    costs the reader a bounded amount per call (``READ_LIMIT``), never the host's attention: lines are split as
    they arrive, a line longer than ``MAX_LINE`` is dropped, and past ``MAX_TOTAL`` bytes the channel reports that
    it was flooded."""

    READ_LIMIT = 1 << 22

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.closed = False
        self.total = 0
        self.flooded = False
        os.set_blocking(fd, False)

    def read_available(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        taken = 0
        while not self.closed and taken < self.READ_LIMIT:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                self.closed = True
                break
            taken += len(data)
            self.buffer += data
        self.total += taken
        start = 0
        while (end := self.buffer.find(b"\n", start)) >= 0:
            out.append(_report(bytes(self.buffer[start:end])))
            start = end + 1
        del self.buffer[:start]
        if len(self.buffer) > MAX_LINE:
            out.append({"kind": "garbled", "raw": "a line longer than the channel allows"})
            self.buffer.clear()
        if self.total > MAX_TOTAL and not self.flooded:
            self.flooded = True
            out.append({"kind": "garbled", "raw": f"more than {MAX_TOTAL} bytes of reports"})
        return out


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Neither the engine nor the rank's Python ever writes a key twice; JSON keeps the last, so a line spliced with
    # text of the solution's (a write of its own into the middle of the engine's) could override a rule's field.
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey
    return out


def _report(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line, object_pairs_hook=_unique_keys)
    except Exception:  # noqa: BLE001 - not JSON, a key twice, or nested past the parser's depth: not ours
        message = None
    return message if isinstance(message, dict) else {"kind": "garbled", "raw": line[:200].decode("utf-8", "replace")}


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def _text_list(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _text_map(value_ok: Any) -> Any:
    return lambda v: type(v) is dict and all(type(k) is str and value_ok(x) for k, x in v.items())


# What a rank's report may hold, field by field, whatever its kind: the host reads these fields (counts, sums, lists it
# walks, the first entry of a refusal), so a report written by the solution's code rather than the rank's, with a
# field of another type, is the solution's doing and never a failure of the host.
_RANK_FIELDS: dict[str, Any] = {
    "kind": lambda v: type(v) is str,
    "rank": lambda v: type(v) is int,
    "i": lambda v: type(v) is int,
    "pid": lambda v: type(v) is int,
    "name": lambda v: type(v) is str,
    "phase": lambda v: type(v) is str,
    "category": lambda v: type(v) is str,
    "message": lambda v: type(v) is str,
    "traceback": lambda v: type(v) is str,
    "launch_us": _number,
    "gate_us": _number,
    "nbytes": lambda v: v is None or type(v) is int,
    "digest": lambda v: type(v) is int,
    "devices": lambda v: type(v) is list and all(x is None or type(x) is str for x in v),
    "aliases": _text_list,
    "subclasses": _text_list,
    "multicast_changed": _text_list,
    "inputs_swapped": _text_list,
    "signals_changed": _text_list,
    "calls": _text_map(lambda x: type(x) is int),
    "py_threads": _text_map(lambda x: type(x) is str),
    "steps_us": _text_map(_number),
    "boot_steps": _text_map(_number),
    "environment": lambda v: type(v) is dict,
}
# Added by the host as a report arrives (its clock, its bookkeeping): never the rank's to set.
HOST_FIELDS = frozenset({"received", "at", "_counted"})


def _finite(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 32:
        return True  # deeper than the parser reads: garbled before it gets here
    if isinstance(value, dict):
        return all(_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v, depth + 1) for v in value)
    return True


def malformed_rank_report(message: dict[str, Any], rank: int) -> str | None:
    """Why ``message``, read from rank ``rank``'s report channel, is not a report the rank's own code writes (a field
    of the wrong type, another rank's number, a field the host sets), or None."""
    if message.get("kind") == "garbled":
        return None
    if message.get("rank") != rank:
        return f"a report claiming rank {str(message.get('rank'))[:20]}"
    if not _finite(message):
        # Python's parser reads NaN and the infinities, which are not JSON; the engine never writes them.
        return "a report carrying a number that is not finite"
    for key, value in message.items():
        if key in HOST_FIELDS:
            return f"a report setting {key!r}, which the host sets"
        ok = _RANK_FIELDS.get(key)
        if ok is not None and not ok(value):
            return f"a report whose {key!r} is {type(value).__name__}"
    return None


def send(fd: int, kind: str, **payload: Any) -> None:
    data = (json.dumps({"kind": kind, **payload}, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


HEADER_MAX = 1 << 20
ALIGN = 64
_MAGIC = b"ARNT0001"


def _dtypes() -> dict[str, Any]:
    import torch

    return {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


def _bytes_of(t: Any) -> memoryview:
    """A contiguous CPU tensor's own bytes, writable, through its pointer: nothing beyond torch is needed, and the
    tensor must stay alive while the view is used. A buffer (a slot's mapping) as it is."""
    if not hasattr(t, "data_ptr"):
        return memoryview(t).cast("B")
    n = t.numel() * t.element_size()
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B") if n else memoryview(bytearray())


def _padded(nbytes: int) -> int:
    return nbytes + (-nbytes) % ALIGN


def _layout(values: list[Any]) -> tuple[bytes, list[tuple[Any, int, int]], int]:
    """The file's header; per tensor, (tensor, offset, bytes) with the offset from the start of the data; and the
    data's size, padding included."""
    import torch

    tb = torch._C.TensorBase
    parts: list[tuple[Any, int, int]] = []
    offset = 0

    def entry(v: Any) -> Any:
        nonlocal offset
        if type(v) is list:
            return [entry(x) for x in v]
        if not isinstance(v, tb):
            return None
        t = tb.detach(v)
        nbytes = tb.numel(t) * tb.element_size(t)
        meta = {
            "dtype": str(tb.dtype.__get__(t)).removeprefix("torch."),
            "shape": list(tb.shape.__get__(t)),
            "offset": offset,
            "nbytes": nbytes,
        }
        parts.append((t, offset, nbytes))
        offset += _padded(nbytes)
        return meta

    header = _header([entry(v) for v in values]).encode()
    return header, parts, offset


def _header(entries: list[Any]) -> str:
    """The header's JSON, written here rather than by :mod:`json`, whose encoder is Python looked up at run time:
    in a rank this runs after the timer has stopped, and a solution that rebound ``json.dumps`` did its work there.
    Entries are None, lists of entries, or a tensor's dtype name, shape and two offsets: nothing to escape."""

    def one(e: Any) -> str:
        if e is None:
            return "null"
        if type(e) is list:
            return "[" + ", ".join([one(x) for x in e]) + "]"
        shape = ", ".join([str(n) for n in e["shape"]])
        return (
            f'{{"dtype": "{e["dtype"]}", "shape": [{shape}], "offset": {str(e["offset"])}, '
            f'"nbytes": {str(e["nbytes"])}}}'
        )

    return '{"values": [' + ", ".join([one(e) for e in entries]) + "]}"


def _prefix(header: bytes) -> bytes:
    head = _MAGIC + len(header).to_bytes(8, "little") + header
    return head + b"\0" * (_padded(len(head)) - len(head))


def save_tensors(path: Path, values: list[Any]) -> None:
    """Writes ``values`` — tensors on any device (copied to the CPU), other objects as None, or lists of those one
    level deep — atomically, as raw bytes behind a JSON header: no pickle, so reading runs no code."""
    header, parts, _ = _layout(values)
    partial = path.with_name(path.name + ".part")
    with open(partial, "wb") as f:
        f.write(_prefix(header))
        for t, _, n in parts:
            c = t.to("cpu").contiguous()
            f.write(_bytes_of(c))
            f.write(b"\0" * (_padded(n) - n))
            del c
    os.replace(partial, path)


def open_plain(path: Path) -> int:
    """A descriptor for reading ``path``, a file the other side of a sandbox wrote; ValueError unless it is a plain
    file. Its last component is never followed as a link, because a link resolves in the reader's namespace (the
    host, as root, would read its own files into a result), and opening never waits, as it would on a FIFO until
    a writer came. The folders above it belong to the reader, so only the last component is the writer's."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{Path(path).name} is not a plain file")
    return fd


def read_plain_text(path: Path, head: int, tail: int) -> str:
    """The first ``head`` and last ``tail`` bytes of a plain file (:func:`open_plain`) as text, a mark between them
    where the middle was left out: a log may be gigabytes, and only its ends are shown."""
    fd = open_plain(path)
    try:
        size = os.fstat(fd).st_size
        if size <= head + tail:
            data = os.pread(fd, size, 0)
        else:
            data = (
                os.pread(fd, head, 0)
                + f"\n… [{size - head - tail} bytes cut] …\n".encode()
                + os.pread(fd, tail, size - tail)
            )
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def load_tensors(path: Path) -> list[Any]:
    """Reads what :func:`save_tensors` wrote, checking every field: a file written by solution code yields plain
    CPU tensors, Nones and lists, or a ValueError (a link or anything but a plain file included)."""
    import torch

    with os.fdopen(open_plain(path), "rb") as f:
        length = os.fstat(f.fileno()).st_size
        whole = torch.empty(length, dtype=torch.uint8)
        got = f.readinto(_bytes_of(whole))
    if got != length:
        raise ValueError(f"{Path(path).name} changed size while it was read")
    return _parse(whole, length, Path(path).name)


def _parse(whole: Any, length: int, name: str) -> list[Any]:
    """The values held in the first ``length`` bytes of the byte tensor ``whole``, as views of it; every field of
    the header is checked against those bytes."""
    import torch

    data = _bytes_of(whole)[:length]
    if len(data) < 16 or data[:8] != _MAGIC:
        raise ValueError(f"{name} is not a tensor file of the evaluator")
    size = int.from_bytes(data[8:16], "little")
    if size > HEADER_MAX or 16 + size > len(data):
        raise ValueError(f"{name} has a header of {size} bytes")
    header = json.loads(bytes(data[16 : 16 + size]))
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
        if not (
            isinstance(shape, list)
            and all(isinstance(n, int) and n >= 0 for n in shape)
            and isinstance(offset, int)
            and isinstance(nbytes, int)
            and offset >= 0
            and offset % ALIGN == 0
        ):
            raise ValueError("a tensor entry with a bad shape or offset")
        count = 1
        for n in shape:
            count *= n
        if count * torch.empty((), dtype=dtype).element_size() != nbytes or base + offset + nbytes > len(data):
            raise ValueError("a tensor entry whose size does not match its shape")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        return whole[base + offset : base + offset + nbytes].view(dtype).reshape(shape)

    values = header.get("values") if isinstance(header, dict) else None
    if not isinstance(values, list):
        raise ValueError(f"{name} does not hold a list")
    return [value(v, 0) for v in values]


# The slots of one evaluation: in each judge rank's private folder, the inputs of every call (the judge writes
# it at the opening of the call's window; the solution's rank of that number reads it through a descriptor the host
# gave it alone), the same inputs for the baseline (in a slot no other process sees), the baseline's own outputs,
# and the host's copy of the solution's outputs; in each rank's exchange folder, the solution's outputs.
FEED_SLOT, BASELINE_FEED_SLOT, BASELINE_SLOT, RETURNED_SLOT, OUT_SLOT = (
    "feed.slot",
    "baseline-feed.slot",
    "baseline.slot",
    "returned.slot",
    "out.slot",
)

# A slot holds one frame, the format the compiled engine (evaluator/timer/_engine.cpp) reads and writes: a 16-byte
# head (magic, number of entries, how many of them are outputs), 96 bytes per entry (kind: 0 none, 1 tensor; dtype as
# c10's ScalarType number; dimensions; offset and size of its bytes from the data's start; up to 8 sizes), then the
# data, every part 64-byte aligned. Fixed fields only: compiled code parses it without a JSON library.
FRAME_MAGIC = b"ARNB0001"
# An out frame whose data is in the judge's device memory for a rank's outputs (GPU hosts), at the offsets its head
# names as though the head were in front of it there too; only the head is in the slot.
DEVICE_FRAME_MAGIC = b"ARND0001"
# A feed frame laid out the same way in a side's device feed, whose data the judge writes there only once the call's
# stream has reached the gate (evaluator/timer/_engine.cpp pass_gate); the gate's token is the head's last eight bytes
# before the data, which are padding in any other frame.
GATED_FRAME_MAGIC = b"ARNG0001"
FRAME_HEAD = struct.Struct("<8sII")
FRAME_ENTRY = struct.Struct("<BBB5xQQ8q8x")
MAX_ENTRIES, MAX_DIMS = (
    4096,
    8,
)  # values of a frame: a timed window's calls side by side (the engine's MAX_FRAME_ENTRIES)
# c10::ScalarType's numbers of the dtypes a frame may hold (the engine allows the same set).
DTYPE_CODES = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "complex32": 8,
    "complex64": 9,
    "complex128": 10,
    "bool": 11,
    "bfloat16": 15,
    "float8_e5m2": 23,
    "float8_e4m3fn": 24,
    "uint16": 27,
    "uint32": 28,
    "uint64": 29,
}


def frame_layout(values: list[Any], magic: bytes = FRAME_MAGIC) -> tuple[bytes, list[tuple[Any, int, int]], int]:
    """A frame's head and entries for ``values`` (tensors on any device, anything else as none), the tensors with
    their offsets from the data's start and sizes, and the data's size, padding included."""
    import torch

    entries, parts, offset = [], [], 0
    for v in values:
        if type(v) is not torch.Tensor:
            entries.append(FRAME_ENTRY.pack(0, 0, 0, 0, 0, *([0] * MAX_DIMS)))
            continue
        name = str(v.dtype).removeprefix("torch.")
        if name not in DTYPE_CODES or v.dim() > MAX_DIMS:
            raise ValueError(f"a tensor of {v.dtype} with {v.dim()} dimensions cannot be sent")
        nbytes = v.numel() * v.element_size()
        shape = list(v.shape) + [0] * (MAX_DIMS - v.dim())
        entries.append(FRAME_ENTRY.pack(1, DTYPE_CODES[name], v.dim(), offset, nbytes, *shape))
        parts.append((v, offset, nbytes))
        offset += _padded(nbytes)
    head = FRAME_HEAD.pack(magic, len(values), len(values)) + b"".join(entries)
    return head + b"\0" * (_padded(len(head)) - len(head)), parts, offset


def frame_bytes(values: list[Any]) -> Any:
    """``values`` laid out as one frame in a byte tensor in host memory, as :meth:`Slot.write` lays them out in a
    slot: made ahead, a frame of many small values is then written in one copy (:meth:`Slot.write_frame`)."""
    import torch

    head, parts, total = frame_layout(values)
    out = torch.zeros(len(head) + total, dtype=torch.uint8)
    out[: len(head)].copy_(torch.frombuffer(bytearray(head), dtype=torch.uint8))
    for t, off, n in parts:
        if n:
            out[len(head) + off : len(head) + off + n].view(t.dtype).view(t.shape).copy_(t)
    return out


def parse_frame(whole: Any, length: int, name: str, device_data: Any = None) -> tuple[list[Any], int]:
    """The values in the first ``length`` bytes of the byte tensor ``whole`` (views of it) and how many of them are
    outputs; every field is checked against those bytes, so a frame written by solution code yields plain tensors and
    Nones, or a ValueError. A device frame (its head alone in ``whole``) is read only with ``device_data``, the byte
    tensor in device memory its data lies in, at the offsets the head names as though the head were in front of it
    there too: its values are views of that (a frame with its data ignores ``device_data``)."""
    import torch

    data = _bytes_of(whole)[:length]
    device = is_device_frame(whole, length)
    if device and device_data is None:
        raise ValueError(f"{name} holds a frame whose data is in device memory this reader was not given")
    base, entries, outputs, end = _frame_entries(data, name, device)
    source = device_data if device else whole
    if device and end > device_data.numel():
        raise ValueError(f"{name} names data beyond its device memory")
    values: list[Any] = []
    for e in entries:
        if e is None:
            values.append(None)
            continue
        dtype, dims, offset, nbytes = e
        values.append(
            torch.empty(dims, dtype=dtype)
            if nbytes == 0
            else source[base + offset : base + offset + nbytes].view(dtype).reshape(dims)
        )
    return values, outputs


def device_frame_span(whole: Any, length: int, name: str) -> tuple[int, int, list[tuple[int, int]]]:
    """Where the data of the device frame whose head is the first ``length`` bytes of ``whole`` lies in its device
    memory (from the head's padded size to the end of its last value), and the ranges of it that are no value's (each
    value's padding), which must hold zeros (ValueError: not such a frame)."""
    data = _bytes_of(whole)[:length]
    base, entries, _, end = _frame_entries(data, name, device=True)
    padding = [
        (base + offset + nbytes, base + offset + _padded(nbytes))
        for _, _, offset, nbytes in (e for e in entries if e)
        if nbytes % ALIGN
    ]
    return base, end, padding


def is_device_frame(whole: Any, length: int) -> bool:
    return length >= FRAME_HEAD.size and bytes(_bytes_of(whole)[:8]) == DEVICE_FRAME_MAGIC


def _frame_entries(data: Any, name: str, device: bool) -> tuple[int, list[Any], int, int]:
    """A frame's head checked field by field: where its data starts, each value's (dtype, dims, offset, nbytes) or
    None, how many are outputs, and where its data ends. With ``device``, a device frame's head (alone in ``data``);
    else a frame with its data, whose bytes outside the values must be zero."""
    import torch

    if len(data) < FRAME_HEAD.size:
        raise ValueError(f"{name} holds no frame")
    magic, count, outputs = FRAME_HEAD.unpack_from(data)
    if (
        magic != (DEVICE_FRAME_MAGIC if device else FRAME_MAGIC)
        or count > MAX_ENTRIES
        or outputs > count
        or FRAME_HEAD.size + count * FRAME_ENTRY.size > len(data)
    ):
        raise ValueError(f"{name} does not hold a frame of the evaluator")
    base = _padded(FRAME_HEAD.size + count * FRAME_ENTRY.size)
    # Every byte that is no value's is zero, and the values lie end to end, as both writers lay them out: a frame's
    # free bytes would let a write after the reply keep the frame's digest unchanged (a CRC-32C is linear; a device
    # frame's digest sums an invertible mix of each word, so one word of free choice balances any change). A device
    # frame's padding is in device memory: its reader checks it there (device_frame_span).
    if base > len(data) or any(data[FRAME_HEAD.size + count * FRAME_ENTRY.size : base]):
        raise ValueError(f"{name} has bytes outside its values that are not zero")
    dtypes = {code: getattr(torch, n) for n, code in DTYPE_CODES.items() if hasattr(torch, n)}
    entries: list[Any] = []
    packed = 0
    for k in range(count):
        at = FRAME_HEAD.size + k * FRAME_ENTRY.size
        kind, code, ndim, offset, nbytes, *shape = FRAME_ENTRY.unpack_from(data, at)
        entry = data[at : at + FRAME_ENTRY.size]
        if any(entry[3:8]) or any(entry[-8:]) or (ndim <= MAX_DIMS and any(shape[ndim:])):
            raise ValueError(f"{name} has bytes outside its values that are not zero")
        if kind == 0:
            if any(entry):
                raise ValueError(f"{name} has a malformed entry")
            entries.append(None)
            continue
        if kind != 1 or code not in dtypes or ndim > MAX_DIMS or any(n < 0 for n in shape) or offset % ALIGN:
            raise ValueError(f"{name} has a malformed entry")
        if offset != packed or (not device and any(data[base + offset + nbytes : base + offset + _padded(nbytes)])):
            raise ValueError(f"{name} has bytes outside its values that are not zero")
        packed += _padded(nbytes)
        dims = shape[:ndim]
        count_ = 1
        for n in dims:
            count_ *= n
        dtype = dtypes[code]
        if count_ * torch.empty((), dtype=dtype).element_size() != nbytes or (
            not device and base + offset + nbytes > len(data)
        ):
            raise ValueError(f"{name} has an entry whose size does not match its shape")
        entries.append((dtype, dims, offset, nbytes))
    return base, entries, outputs, base + packed


def lay_out_data(values: list[Any], view: Any) -> tuple[int, int] | None:
    """The data of a frame of ``values`` copied into the byte tensor ``view`` (a gate's source in device memory) where a
    gated frame's head names it, padding zeroed; returns where it starts and ends there, or None (nothing written)
    when it does not fit."""
    head, parts, total = frame_layout(values, GATED_FRAME_MAGIC)
    if len(head) + total > view.numel():
        return None
    _lay_out(view, len(head), parts)
    return len(head), len(head) + total


def _lay_out(view: Any, base: int, parts: list[tuple[Any, int, int]]) -> None:
    """A frame's values (``frame_layout``'s parts) copied into the byte tensor ``view`` from ``base`` on, each one's
    padding zeroed: a slot's mapping, or a device feed."""
    for t, off, n in parts:
        if n:
            view[base + off : base + off + n].view(t.dtype).view(t.shape).copy_(t)
        view[base + off + n : base + off + _padded(n)].zero_()


class Slot:
    """A frame file that lasts the whole evaluation, mapped into the process: every call's inputs and outputs pass
    through slots, so no call pays for a fresh file or mapping (each frame is written on fresh pages: _fresh), and
    where a GPU is used the mapping is page-locked (cudaHostRegister), so copies between it and the device run at the
    copy engines' speed. The writer grows the file when a larger draw needs it; a reader maps it again when it finds
    the file's size changed. Values read are views of the mapping, valid until the next write: copy them before that.
    Used on the trusted side (the judge); in a solution's rank the engine reads and writes slots itself."""

    GROW = 1 << 20

    def __init__(self, fd: int, *, writable: bool, pinned: bool, name: str = "slot") -> None:
        self.fd, self.writable, self.pinned, self.name = fd, writable, pinned, name
        self.size = 0
        self.bytes: Any = None  # a uint8 tensor over the mapping
        self._registered = 0
        self._map: Any = None
        self._punch = True  # until the file system refuses a hole

    def _fresh(self, need: int) -> None:
        """The slot's first ``need`` bytes on pages no earlier frame was written on. A rank can have the kernel keep
        references to its slot's pages and copy them later, with no thread of its running (a pipe it vmspliced them
        into, zero-copy sends paced out by the kernel: a red team's carried the next call's inputs, written while the
        rank was held, to its peer). Punched out of the file, such a page keeps what it held (the engine zeroes a
        frame once read), and the new frame lands on new pages. Not for a slot meant to be page-locked (GPU hosts):
        CUDA's registration, this side's or the rank's, holds the pages it locked, and would copy stale ones (those
        slots carry only a gated frame's head, or inputs too large for the device feed: docs/threat-model.md)."""
        if not self._punch or self.pinned or self._map is None or need <= 0:
            return
        try:
            self._map.madvise(mmap.MADV_REMOVE, 0, min(need + (-need) % mmap.PAGESIZE, self.size))
        except OSError:
            self._punch = False

    @classmethod
    def open(cls, path: Path, *, writable: bool, pinned: bool) -> Slot:
        fd = os.open(path, (os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY) | os.O_NOFOLLOW, 0o644)
        return cls(fd, writable=writable, pinned=pinned, name=Path(path).name)

    def _room(self, need: int) -> None:
        """The slot ready for a frame of ``need`` bytes: large enough, and those bytes on fresh pages (_fresh)."""
        # The file's size is read, not remembered: a rank holding the slot's descriptor could have shrunk it, and
        # writing through a mapping past the file's end kills the writer (SIGBUS).
        now = os.fstat(self.fd).st_size
        if need > self.size or now < self.size:
            size = max(need + (-need) % self.GROW, 2 * self.size) if need > self.size else self.size
            # Grown only, never cut: a file a rank grew past this is mapped in part (a feed slot is sealed against
            # shrinking, and cutting it would fail the judge: a red team's way to turn its verdict into the
            # platform's error).
            if now < size:
                os.ftruncate(self.fd, size)
            self._remap(size)
        self._fresh(need)

    def write_frame(self, frame: Any) -> int:
        """Writes a frame :func:`frame_bytes` made, in one copy; returns how many bytes of the slot it fills."""
        need = int(frame.numel())
        self._room(need)
        self.bytes[:need].copy_(frame)
        return need

    def write(self, values: list[Any]) -> int:
        """Writes ``values`` as one frame; returns how many bytes of the slot it fills."""
        import torch

        head, parts, total = frame_layout(values)
        need = len(head) + total
        self._room(need)
        self.bytes[: len(head)].copy_(torch.frombuffer(bytearray(head), dtype=torch.uint8))
        _lay_out(self.bytes, len(head), parts)
        return need

    def write_gated(self, values: list[Any], room: int, token: int) -> tuple[int, int] | None:
        """Writes the head of a gated frame of ``values`` into this slot, with the gate's ``token``: the frame whose
        data goes into a device feed of ``room`` bytes only at the gate (the judge's ``gate``), laid out as
        :func:`lay_out_data` lays it out. Returns where the data starts and ends in the feed, or None (nothing
        written) when they do not fit there."""
        import torch

        head, _, total = frame_layout(values, GATED_FRAME_MAGIC)
        base = len(head)
        if base + total > room:
            return None
        head = head[: base - 8] + struct.pack("<Q", token)
        self._room(base)
        self.bytes[:base].copy_(torch.frombuffer(bytearray(head), dtype=torch.uint8))
        return base, base + total

    def read(self, length: int | None = None) -> list[Any]:
        """The values of the frame in the slot (in its first ``length`` bytes, when given), as views."""
        return self.read_frame(length)[0]

    def read_frame(self, length: int | None = None, device_data: Any = None) -> tuple[list[Any], int]:
        """The values and how many of them are outputs (:func:`parse_frame`); a device frame's from ``device_data``."""
        size = os.fstat(self.fd).st_size
        if size != self.size:
            self._remap(size)
        if self.bytes is None:
            raise ValueError(f"{self.name} is empty")
        return parse_frame(self.bytes, min(size, length) if length is not None else size, self.name, device_data)

    def view(self, length: int) -> memoryview:
        """The slot's first ``length`` bytes, mapped (no copy); shorter when the slot is."""
        size = os.fstat(self.fd).st_size
        if size != self.size:
            self._remap(size)
        return memoryview(self._map)[:length] if self._map is not None else memoryview(b"")

    def _remap(self, size: int) -> None:
        import torch

        self._unregister()
        self.bytes, self._map, self.size = None, None, 0
        if size == 0:
            return
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if self.writable else 0)
        self._map = mmap.mmap(self.fd, size, flags=mmap.MAP_SHARED, prot=prot)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a read-only mapping: torch warns that the buffer is not writable
            self.bytes = torch.frombuffer(self._map, dtype=torch.uint8)
        self.size = size
        if self.pinned and _in_memory(self.fd):
            cudart = torch.cuda.cudart()
            address = self.bytes.data_ptr()
            # cudaHostRegisterPortable (1), and ReadOnly (8) for a mapping this process may only read.
            err = cudart.cudaHostRegister(address, size, 1 if self.writable else 9)
            self._registered = address if int(err) == 0 else 0
            if not self._registered and hasattr(cudart, "cudaGetLastError"):
                cudart.cudaGetLastError()  # refused: copies go through pageable memory, and no error is left over

    def _unregister(self) -> None:
        if self._registered:
            import torch

            torch.cuda.cudart().cudaHostUnregister(self._registered)
            self._registered = 0

    def close(self) -> None:
        self._unregister()
        self.bytes = self._map = None
        os.close(self.fd)


_TMPFS_MAGIC = 0x01021994


def _in_memory(fd: int) -> bool:
    """Whether the file is on tmpfs: CUDA page-locks a shared mapping of a file in memory, and refuses one of a file on
    disk (an evaluation folder outside /dev/shm, ARENA_WORKDIR_ROOT)."""
    buf = _STATFS()
    if _fstatfs(fd, buf) != 0:
        return False
    return int.from_bytes(buf.raw[:_LONG], "little") == _TMPFS_MAGIC
