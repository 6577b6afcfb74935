"""GPU only; written by a red team of timing protocol revision 14.

Route: the engine's own table, read through the process's own memory file (procfs), with no ctypes.

The engine keeps the staging buffer's device address in its table ``arena_fixed`` (a local symbol in .symtab). This
finds the engine's file and load address in /proc/self/maps, the table's offset in the file's symbol table, and reads
the table's bytes with os.pread on the process's own memory file, whose path is joined from words none of which the
static check's pattern matches (the same reach as proc_memory_seeds, on the process itself). The words (feed_dev,
feed_bytes, stage_dev, stage_bytes) are found by their shape, the staging buffer's bytes are compared with the input in
the first call, and from then on every call copies its input out of the staging buffer on a side stream that does not
wait for the call's stream: under the spin, before the start event. On one rank the all-reduce of x is x.
"""

import os
import struct

import torch
import torch.distributed as dist
import triton
import triton.language as tl

ROUTE = "engine_table_proc_mem"
_found: dict = {}


@triton.jit
def _copy_from_address(address, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    src = address.to(tl.pointer_type(out.dtype.element_ty))
    tl.store(out + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def _copy(address: int, like: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(like)
    n = like.numel()
    _copy_from_address[(triton.cdiv(n, 4096),)](address, out, n, BLOCK=4096)
    return out


def _engine_file() -> tuple[str, int]:
    """The engine's file and where its first page is loaded."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) > 5 and parts[5].endswith("_arena_timer.so") and int(parts[2], 16) == 0:
                return parts[5], int(parts[0].split("-")[0], 16)
    raise LookupError("no _arena_timer.so in /proc/self/maps")


def _symbols(path: str, names: tuple[bytes, ...]) -> dict:
    data = open(path, "rb").read()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    found: dict = {}
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        str_off = sections[link][4]
        for k in range(size // entsize):
            st_name, _, _, _, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off + k * entsize)
            end = data.index(b"\0", str_off + st_name)
            name = data[str_off + st_name : end]
            if name in names and st_value:
                found.setdefault(name, (st_value, st_size))
    return found


def _stage_from_table(raw: bytes, need: int) -> list:
    """Every (stage_dev, stage_bytes, feed_dev): four consecutive words, two addresses and two equal sizes."""
    words = struct.unpack_from(f"<{len(raw) // 8}Q", raw)
    hits = []
    for i in range(len(words) - 3):
        feed, feed_bytes, stage, stage_bytes = words[i : i + 4]
        if (
            feed_bytes == stage_bytes
            and need <= stage_bytes < (1 << 40)
            and stage_bytes % 0x10000 == 0
            and feed
            and stage
            and feed != stage
            and feed % 0x10000 == 0
            and stage % 0x10000 == 0
            and feed < (1 << 57)
            and stage < (1 << 57)
        ):
            hits.append((stage, stage_bytes, feed))
    return hits


def _read_table() -> bytes:
    path, base = _engine_file()
    fixed, size = _symbols(path, (b"arena_fixed",))[b"arena_fixed"]
    # The process's own memory as a file: a process may always read itself (same thread group, whatever its
    # dumpable flag), and sealed pages are read-only, not unreadable. The path is joined from plain words.
    fd = os.open(os.path.join("/proc", "self", "mem"), os.O_RDONLY)
    try:
        return os.pread(fd, size, base + fixed)
    finally:
        os.close(fd)


def _look(x: torch.Tensor) -> None:
    torch.cuda.current_stream(x.device).synchronize()  # the input is filled once the call's stream gets here
    _found["address"] = None
    try:
        raw = _read_table()
        hits = _stage_from_table(raw, x.nbytes)
        for stage, stage_bytes, feed in hits:
            if torch.equal(_copy(stage, x), x):
                _found["address"] = stage
                print(f"ARENA_RT_FOUND {ROUTE} stage={stage:#x} bytes={stage_bytes} feed={feed:#x}", flush=True)
                return
        print(
            f"ARENA_RT_ABSENT {ROUTE}: table read ({len(raw)} bytes), {len(hits)} candidates, none holds the input",
            flush=True,
        )
    except Exception as exc:  # noqa: BLE001 - any failure of the route: honest work
        print(f"ARENA_RT_ABSENT {ROUTE}: {type(exc).__name__}: {exc}", flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() != 1:
        out = x.clone()
        dist.all_reduce(out)
        return out
    if "address" not in _found:
        _look(x)
    address = _found["address"]
    if address is None:
        out = x.clone()
        dist.all_reduce(out)
        return out
    side = _found.setdefault("side", torch.cuda.Stream(device=x.device))
    with torch.cuda.stream(side):
        out = _copy(address, x)
    torch.cuda.current_stream(x.device).wait_stream(side)
    out.record_stream(torch.cuda.current_stream(x.device))
    return out
