"""Where the engine's command read sits in its built file (evaluator/timer/_engine.cpp, ``arena_read_command``).

Between two of the host's commands a rank's main thread is blocked in that read and nowhere else. The host compares
a stopped rank's program counter, and on x86_64 the return address on top of its stack, with the file offsets found
here: the instruction after the read's system call, and the instructions after each direct call of the read (serve's).
They come from the file the host built, not from the rank, so nothing the solution writes can move them."""

from __future__ import annotations

import functools
import os
import platform
import struct
from dataclasses import dataclass
from typing import Any

READ = "arena_read_command"
READ_RETURN = "arena_read_command_return"


class EngineSiteError(RuntimeError):
    """The engine's file lacks the command read the host checks for (an engine built from other source)."""


@dataclass(frozen=True)
class ReadSite:
    after_syscall: int  # file offset of the instruction after the read's system call: a blocked reader's counter
    returns: frozenset[int]  # file offsets right after each call of the read: where the read returns to


@dataclass(frozen=True)
class _Segment:
    offset: int
    vaddr: int
    size: int
    executable: bool
    writable: bool


def built_bytes(path: str) -> bytes:
    """The engine's file as the host built it, read once per version of the file: what its code in each rank must
    be, byte for byte."""
    st = os.stat(path)
    return _built_bytes(path, st.st_ino, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _built_bytes(path: str, inode: int, mtime_ns: int) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def constant_extents(path: str) -> list[tuple[int, int]]:
    """The file offsets (start, end) of the engine's segments that are never written once it is loaded: its code and
    its constant data, which every rank must hold byte for byte as the file does. The writable segment (its state,
    and the table of addresses the loader fills in, made read-only afterwards) differs in every process."""
    return [(s.offset, s.offset + s.size) for s in _segments(built_bytes(path)) if not s.writable]


DRIVER = "arena_driver"  # the engine's table of CUDA driver functions, set at open()
FIXED = "arena_fixed"  # what the engine sets at open() and never writes again (its backend, its key, its descriptors)
SERVING = "arena_serving"  # the engine's re-entry guard: true from serve()'s start, so at every stop after a reply


def fixed_extents(path: str) -> list[tuple[int, int]]:
    """The engine's addresses (start, end, relative to where it is loaded) that hold what is set before the solution
    loads and never written again: the loader's table of library addresses and the other data it made read-only
    (linked with full RELRO, every entry is bound at load), and the driver's table. Unlike the constant extents they
    differ from process to process, so each rank's are compared with what the same rank held before its solution
    loaded."""
    data = built_bytes(path)
    out = [(h[3], h[3] + h[5]) for h in _program_headers(data) if h[0] == 0x6474E552]  # PT_GNU_RELRO
    sized = _symbols(data, (DRIVER, FIXED), sizes=True)
    for name in (DRIVER, FIXED):
        if name not in sized:
            raise EngineSiteError(f"{path} has no symbol {name}: rebuild the engine from this source")
        value, size = sized[name]
        out.append((value, value + size))
    return out


def serving_flag(path: str) -> int:
    """The address (relative to where the engine is loaded) of its re-entry guard, a one-byte flag."""
    sized = _symbols(built_bytes(path), (SERVING,), sizes=True)
    if SERVING not in sized or sized[SERVING][1] != 1:
        raise EngineSiteError(f"{path} has no one-byte symbol {SERVING}: rebuild the engine from this source")
    return sized[SERVING][0]


def read_site(path: str) -> ReadSite:
    """The command read's offsets in the engine at ``path``, read once per version of the file."""
    st = os.stat(path)
    return _read_site(path, st.st_ino, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _read_site(path: str, inode: int, mtime_ns: int) -> ReadSite:
    data = _built_bytes(path, inode, mtime_ns)
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise EngineSiteError(f"{path} is not a 64-bit little-endian ELF file")
    segments = _segments(data)
    symbols = _symbols(data, (READ, READ_RETURN))
    missing = [name for name in (READ, READ_RETURN) if name not in symbols]
    if missing:
        raise EngineSiteError(f"{path} has no symbol {', '.join(missing)}: rebuild the engine from this source")

    def offset_of(vaddr: int) -> int:
        for s in segments:
            if s.vaddr <= vaddr < s.vaddr + s.size:
                return vaddr - s.vaddr + s.offset
        raise EngineSiteError(f"{path}: address {vaddr:#x} lies in no loaded segment")

    returns = frozenset(offset_of(v) for v in _calls_of(data, segments, symbols[READ]))
    if not returns:
        raise EngineSiteError(f"{path} never calls {READ}: rebuild the engine from this source")
    return ReadSite(after_syscall=offset_of(symbols[READ_RETURN]), returns=returns)


_EXTENTS: dict[tuple[int, int, int, tuple[str, ...]], list[tuple[int, int]]] = {}


def function_extents(path: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """The file offsets (start, end) of the functions ``names`` that the ELF file at ``path`` defines (those its
    symbol tables name; a name it lacks is left out), read once per file and version, whatever path reached it (a
    process's link to a file it maps, say). Raises OSError when it cannot be read."""
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        key = (info.st_dev, info.st_ino, info.st_mtime_ns, names)
        if key not in _EXTENTS:
            _EXTENTS[key] = _extents_in(f.read(), names)
    return _EXTENTS[key]


def _extents_in(data: bytes, names: tuple[str, ...]) -> list[tuple[int, int]]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    segments = _segments(data)
    out = []
    for vaddr, size in _symbols(data, names, sizes=True).values():
        for s in segments:
            if s.executable and s.vaddr <= vaddr < s.vaddr + s.size:
                start = vaddr - s.vaddr + s.offset
                out.append((start, start + size))
    return out


def _program_headers(data: bytes) -> list[tuple[int, int, int, int, int, int]]:
    """The file's program headers as (type, flags, offset, vaddr, filesz, memsz)."""
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for k in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz = struct.unpack_from(
            "<IIQQQQQ", data, phoff + k * phentsize
        )
        out.append((p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz))
    return out


def _segments(data: bytes) -> list[_Segment]:
    return [
        _Segment(offset, vaddr, filesz, bool(flags & 1), bool(flags & 2))
        for kind, flags, offset, vaddr, filesz, _ in _program_headers(data)
        if kind == 1  # PT_LOAD
    ]


def _symbols(data: bytes, names: tuple[str, ...], sizes: bool = False) -> dict[str, Any]:
    """The values of ``names`` in the file's symbol tables (.symtab keeps the engine's hidden ones, .dynsym not);
    with ``sizes``, (value, size) pairs."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    wanted = {n.encode() for n in names}
    found: dict[str, Any] = {}
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        str_off = sections[link][4]
        for k in range(size // entsize):
            st_name, _, _, _, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off + k * entsize)
            end = data.index(b"\0", str_off + st_name)
            name = data[str_off + st_name : end]
            if name in wanted and st_value:
                found.setdefault(name.decode(), (st_value, st_size) if sizes else st_value)
    return found


def _calls_of(data: bytes, segments: list[_Segment], target: int) -> list[int]:
    """The addresses right after every direct call of ``target`` in the file's code (x86_64's call rel32,
    aarch64's bl)."""
    out = []
    for s in segments:
        if not s.executable:
            continue
        code = data[s.offset : s.offset + s.size]
        if platform.machine() == "aarch64":
            for k in range(0, len(code) - 3, 4):
                (word,) = struct.unpack_from("<I", code, k)
                if word & 0xFC000000 == 0x94000000:
                    imm = word & 0x03FFFFFF
                    imm -= (imm & 0x02000000) << 1
                    if s.vaddr + k + 4 * imm == target:
                        out.append(s.vaddr + k + 4)
            continue
        k = code.find(b"\xe8")
        while 0 <= k <= len(code) - 5:
            (rel,) = struct.unpack_from("<i", code, k + 1)
            if s.vaddr + k + 5 + rel == target:
                out.append(s.vaddr + k + 5)
            k = code.find(b"\xe8", k + 1)
    return out
