"""The return addresses of a stopped thread's live frames, found from the call-frame information its code carries
(``.eh_frame``, looked up through ``.eh_frame_hdr``'s sorted table), as a debugger's unwinder finds them.

A thread's stack also holds, in the slots its frames have not written yet, whatever an earlier thread left there:
glibc hands a new thread the cached stack of one that ended, unwiped. Reading every word of the live stack therefore
sees an ended Python thread's return addresses in a library thread that never ran Python. Walking the frames by
their call-frame information reads only the slots a return goes through.

x86_64 only: elsewhere :func:`live_frames` answers that it cannot walk, and the caller reads every word."""

from __future__ import annotations

import bisect
import mmap
import os
import platform
import struct
from dataclasses import dataclass, field

_RSP, _RBP, _RA = 7, 6, 16  # DWARF register numbers on x86_64
_PT_LOAD, _PT_GNU_EH_FRAME = 1, 0x6474E550
# Frames walked of one thread: a runtime's threads have 4 to 13 (one H100's CUDA, NCCL and gloo threads). A tenth red
# team's threads stood on chains of 513 return addresses into the C library, each walked at every stop; past this the
# walk stops and every word above counts, as for any frame it cannot pass.
MAX_FRAMES = 128
ROWS_KEPT = 1 << 16  # rule rows kept per object file: a chain of new addresses at every stop must not grow the worker
_UC_GREGS = 40  # where ucontext_t's general registers begin (after uc_flags, uc_link and uc_stack)
PROLOGUE_BYTES = 64  # how much of a function's start is read for its frame pointer's distance from the stack pointer
FRAME_POINTER_REACH = 4096  # how far above a frame's bottom its frame record is looked for


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    offset: int
    path: str


@dataclass
class _Row:
    cfa_reg: int | None = _RSP
    cfa_off: int = 0
    rules: dict[int, tuple[str, int]] = field(default_factory=dict)
    start: int = 0  # where the function the row describes begins
    signal: bool = False  # a signal's frame (_Cie.signal)


class _Unwalkable(Exception):
    """The call-frame information cannot say where this frame's caller is."""


class _Image:
    """One object file's program headers and call-frame tables, read from its bytes."""

    def __init__(self, data: mmap.mmap | bytes) -> None:
        self.data = data
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise _Unwalkable("not a 64-bit little-endian ELF file")
        phoff = struct.unpack_from("<Q", data, 0x20)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        self.loads: list[tuple[int, int, int]] = []  # (vaddr, file offset, size in the file)
        hdr = None
        for k in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + k * phentsize)
            if p_type == _PT_LOAD:
                self.loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == _PT_GNU_EH_FRAME:
                hdr = p_vaddr
        if hdr is None:
            raise _Unwalkable("no .eh_frame_hdr")
        self.hdr: int = hdr
        at = hdr
        version, ptr_enc, count_enc, table_enc = self.read(at, 4)
        if version != 1 or table_enc != 0x3B:  # datarel | sdata4, what every linker writes
            raise _Unwalkable("an .eh_frame_hdr of a form not read here")
        _, size = self._pointer(ptr_enc, at + 4)
        self.fde_count, size2 = self._pointer(count_enc, at + 4 + size)
        self.table = at + 4 + size + size2
        self.rows: dict[int, _Row] = {}
        self.cies: dict[int, _Cie] = {}

    def offset_of(self, vaddr: int) -> int:
        for start, offset, size in self.loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        raise _Unwalkable(f"address {vaddr:#x} is in no loaded part of the file")

    def read(self, vaddr: int, n: int) -> bytes:
        at = self.offset_of(vaddr)
        return bytes(self.data[at : at + n])

    def _pointer(self, enc: int, vaddr: int, datarel: int = 0) -> tuple[int, int]:
        """An encoded pointer at ``vaddr`` (DW_EH_PE_*): its value and its size in bytes."""
        if enc == 0xFF:
            return 0, 0
        fmt = enc & 0x0F
        raw = self.read(vaddr, 16)
        if fmt == 0x01:
            value, size = _uleb(raw, 0)
        elif fmt == 0x09:
            value, size = _sleb(raw, 0)
        else:
            code = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}.get(fmt)
            if code is None:
                raise _Unwalkable(f"pointer encoding {enc:#x}")
            value, size = struct.unpack_from(code, raw)[0], struct.calcsize(code)
        how = enc & 0x70
        if how == 0x10:
            value += vaddr
        elif how == 0x30:
            value += datarel
        elif how != 0x00:
            raise _Unwalkable(f"pointer encoding {enc:#x}")
        if enc & 0x80:
            raise _Unwalkable("an indirect pointer")
        return value & 0xFFFFFFFFFFFFFFFF, size

    def row(self, vaddr: int) -> _Row:
        """The rule row in force at ``vaddr``: where the frame's CFA is and where its caller's registers were saved."""
        if vaddr not in self.rows:
            if len(self.rows) >= ROWS_KEPT:
                self.rows.clear()
            self.rows[vaddr] = self._row(vaddr)
        return self.rows[vaddr]

    def _row(self, vaddr: int) -> _Row:
        lo, hi = 0, self.fde_count - 1
        found = None
        while lo <= hi:
            mid = (lo + hi) // 2
            start, fde = struct.unpack("<ii", self.read(self.table + 8 * mid, 8))
            if start + self.hdr <= vaddr:
                found = fde + self.hdr
                lo = mid + 1
            else:
                hi = mid - 1
        if found is None:
            raise _Unwalkable("no frame description covers the address")
        return self._run_fde(found, vaddr)

    def _run_fde(self, fde: int, target: int) -> _Row:
        length = struct.unpack("<I", self.read(fde, 4))[0]
        if length in (0, 0xFFFFFFFF):
            raise _Unwalkable("a frame description of a form not read here")
        at = fde + 4
        cie = at - struct.unpack("<I", self.read(at, 4))[0]
        end = at + length
        cie_info = self._cie(cie)
        at += 4
        begin, size = self._pointer(cie_info.fde_enc, at)
        at += size
        span, size = self._pointer(cie_info.fde_enc & 0x0F, at)
        at += size
        if not begin <= target < begin + span:
            raise _Unwalkable("no frame description covers the address")
        if cie_info.augmented:
            n, size = _uleb(self.read(at, 10), 0)
            at += size + n
        initial = _Row(cie_info.initial.cfa_reg, cie_info.initial.cfa_off, dict(cie_info.initial.rules))
        row = _execute(self, at, end, begin, target, cie_info, _copy(initial), initial)
        row.start, row.signal = begin, cie_info.signal
        return row

    def _cie(self, cie: int) -> _Cie:
        if cie not in self.cies:
            self.cies[cie] = self._read_cie(cie)
        return self.cies[cie]

    def _read_cie(self, cie: int) -> _Cie:
        length = struct.unpack("<I", self.read(cie, 4))[0]
        if length in (0, 0xFFFFFFFF) or struct.unpack("<I", self.read(cie + 4, 4))[0] != 0:
            raise _Unwalkable("a common information entry of a form not read here")
        end = cie + 4 + length
        raw = self.read(cie + 8, min(length - 4, 64))
        version = raw[0]
        aug_end = raw.index(b"\0", 1)
        aug = raw[1:aug_end].decode("ascii", "replace")
        if "eh" in aug:
            raise _Unwalkable("an old augmentation")
        k = aug_end + 1
        code_align, size = _uleb(raw, k)
        k += size
        data_align, size = _sleb(raw, k)
        k += size
        if version == 1:
            ra_reg = raw[k]
            k += 1
        else:
            ra_reg, size = _uleb(raw, k)
            k += size
        if ra_reg != _RA:
            raise _Unwalkable("a return address kept in another register")
        fde_enc = 0x00
        augmented = aug.startswith("z")
        if augmented:
            aug_len, size = _uleb(raw, k)
            k += size
            body = cie + 8 + k
            j = 0
            for c in aug[1:]:
                if c == "R":
                    fde_enc = self.read(body + j, 1)[0]
                    j += 1
                elif c == "L":
                    j += 1
                elif c == "P":
                    enc = self.read(body + j, 1)[0]
                    _, size = self._pointer(enc & 0x7F, body + j + 1)  # the personality's pointer is only skipped
                    j += 1 + size
                elif c not in "BGS":
                    raise _Unwalkable(f"augmentation {aug!r}")
            k += aug_len
        info = _Cie(code_align, data_align, fde_enc, augmented, _Row(), "S" in aug)
        initial = _execute(self, cie + 8 + k, end, 0, -1, info, _Row(None, 0, {}), _Row(None, 0, {}), whole=True)
        info.initial = initial
        return info


@dataclass
class _Cie:
    code_align: int
    data_align: int
    fde_enc: int
    augmented: bool
    initial: _Row
    signal: bool  # the frames it describes are a signal's ('S'): the kernel's record of the interrupted context


def _copy(row: _Row) -> _Row:
    return _Row(row.cfa_reg, row.cfa_off, dict(row.rules))


def _execute(
    image: _Image,
    at: int,
    end: int,
    loc: int,
    target: int,
    cie: _Cie,
    row: _Row,
    initial: _Row,
    whole: bool = False,
) -> _Row:
    """Runs call-frame instructions from ``at`` to ``end`` until the location passes ``target`` (``whole``: all)."""
    program = image.read(at, end - at) if end > at else b""
    k = 0
    saved: list[_Row] = []
    while k < len(program):
        op = program[k]
        k += 1
        high, low = op & 0xC0, op & 0x3F
        advance = None
        if high == 0x40:
            advance = low * cie.code_align
        elif high == 0x80:
            off, size = _uleb(program, k)
            k += size
            row.rules[low] = ("off", off * cie.data_align)
        elif high == 0xC0:
            _restore(row, initial, low)
        elif op == 0x00:
            pass
        elif op in (0x02, 0x03, 0x04):
            size = {0x02: 1, 0x03: 2, 0x04: 4}[op]
            advance = int.from_bytes(program[k : k + size], "little") * cie.code_align
            k += size
        elif op in (0x05, 0x11, 0x14, 0x15):  # offset_extended(_sf), val_offset(_sf)
            reg, size = _uleb(program, k)
            k += size
            off, size = (_sleb if op in (0x11, 0x15) else _uleb)(program, k)
            k += size
            row.rules[reg] = ("off" if op in (0x05, 0x11) else "val", off * cie.data_align)
        elif op == 0x06:
            reg, size = _uleb(program, k)
            k += size
            _restore(row, initial, reg)
        elif op in (0x07, 0x08):
            reg, size = _uleb(program, k)
            k += size
            row.rules[reg] = ("undefined" if op == 0x07 else "same", 0)
        elif op == 0x09:
            reg, size = _uleb(program, k)
            k += size
            other, size = _uleb(program, k)
            k += size
            row.rules[reg] = ("register", other)
        elif op == 0x0A:
            saved.append(_copy(row))
        elif op == 0x0B:
            if not saved:
                raise _Unwalkable("a state restored that was never kept")
            back = saved.pop()
            row.cfa_reg, row.cfa_off, row.rules = back.cfa_reg, back.cfa_off, back.rules
        elif op in (0x0C, 0x12):
            reg, size = _uleb(program, k)
            k += size
            off, size = (_sleb if op == 0x12 else _uleb)(program, k)
            k += size
            row.cfa_reg, row.cfa_off = reg, off * (cie.data_align if op == 0x12 else 1)
        elif op == 0x0D:
            row.cfa_reg, size = _uleb(program, k)
            k += size
        elif op in (0x0E, 0x13):
            off, size = (_sleb if op == 0x13 else _uleb)(program, k)
            k += size
            row.cfa_off = off * (cie.data_align if op == 0x13 else 1)
        elif op == 0x0F:  # def_cfa_expression: the CFA is computed, which is not followed here
            n, size = _uleb(program, k)
            k += size + n
            row.cfa_reg = None
        elif op in (0x10, 0x16):  # a register saved where an expression says
            reg, size = _uleb(program, k)
            k += size
            n, size = _uleb(program, k)
            k += size + n
            row.rules[reg] = ("expression", 0)
        elif op == 0x2E:  # GNU_args_size
            _, size = _uleb(program, k)
            k += size
        elif op == 0x2F:  # GNU_negative_offset_extended
            reg, size = _uleb(program, k)
            k += size
            off, size = _uleb(program, k)
            k += size
            row.rules[reg] = ("off", -off * cie.data_align)
        else:
            raise _Unwalkable(f"call-frame instruction {op:#x}")
        if advance is not None and not whole:
            loc += advance
            if loc > target:
                break
    return row


def _restore(row: _Row, initial: _Row, reg: int) -> None:
    if reg in initial.rules:
        row.rules[reg] = initial.rules[reg]
    else:
        row.rules.pop(reg, None)


def _uleb(data: bytes, k: int) -> tuple[int, int]:
    value = shift = 0
    start = k
    while True:
        b = data[k]
        k += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, k - start


def _sleb(data: bytes, k: int) -> tuple[int, int]:
    value, size = _uleb(data, k)
    if data[k + size - 1] & 0x40:
        value -= 1 << (7 * size)
    return value, size


# Per file: its tables, or why they cannot be read. A file is known by its device, inode, size and both times: a
# sandbox's tmpfs is made anew for each evaluation, and its device and inode numbers are reused, so a later
# evaluation's file could stand where an earlier one's parsed tables were kept (the change time is the kernel's,
# which no process sets). Kept for the host's life, up to IMAGES_KEPT files, the oldest dropped first.
_IMAGES: dict[tuple[int, ...], _Image | str] = {}
IMAGES_KEPT = 512
_VDSOS: dict[bytes, _Image] = {}  # the kernel's vDSO, by its bytes (the same image in every process of a boot)
VDSO = "[vdso]"


def _image(pid: int, m: Mapping) -> _Image:
    """The object file behind a mapping, opened through the process's own link to it (never by its path, which names
    a file in the sandbox's view of the file system), kept per file (``_IMAGES``). The kernel's vDSO (where a
    thread that reads the clock often is stopped now and then) is read from the process's memory."""
    if m.path == VDSO:
        return _vdso(pid, m)
    link = f"/proc/{pid}/map_files/{m.start:x}-{m.end:x}"
    try:
        fd = os.open(link, os.O_RDONLY)
    except OSError as e:
        raise _Unwalkable(f"{m.path}: {e.strerror}") from e
    try:
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if key not in _IMAGES:
            while len(_IMAGES) >= IMAGES_KEPT:
                del _IMAGES[next(iter(_IMAGES))]
            try:
                _IMAGES[key] = _Image(mmap.mmap(fd, 0, prot=mmap.PROT_READ))
            except (_Unwalkable, ValueError, OSError, struct.error, IndexError) as e:
                _IMAGES[key] = f"{type(e).__name__}: {e}"
    finally:
        os.close(fd)
    image = _IMAGES[key]
    if isinstance(image, str):
        raise _Unwalkable(f"{m.path}: {image}")
    return image


def _vdso(pid: int, m: Mapping) -> _Image:
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        try:
            data = os.pread(fd, m.end - m.start, m.start)
        finally:
            os.close(fd)
        if data not in _VDSOS:
            _VDSOS[data] = _Image(data)
    except (_Unwalkable, ValueError, OSError, struct.error, IndexError) as e:
        raise _Unwalkable(f"{VDSO}: {type(e).__name__}: {e}") from e
    return _VDSOS[data]


@dataclass(frozen=True)
class Frames:
    """What a stopped thread's stack says it runs: where it is and the return addresses of its frames, innermost
    first; the stack address from which every word counts as a return address too; and whether the walk reached a
    frame whose return address its call-frame information marks undefined."""

    addresses: list[int]
    every_word_from: int
    complete: bool
    # Where the thread was when a signal's handler interrupted it (its stack pointer and program counter, from the
    # kernel's record in the signal's frame): a handler may run on a stack of its own, and the interrupted frames lie
    # on another. None when the walk met no signal's frame.
    interrupted: tuple[int, int] | None = None


def live_frames(
    pid: int, sp: int, pc: int, stack: bytes, mappings: list[Mapping], stopped_by: list[str] | None = None
) -> Frames:
    """The frames of a thread stopped at ``pc`` with its stack pointer at ``sp``; ``stack`` holds its memory from
    ``sp`` up, ``mappings`` are the process's executable mappings, sorted; ``stopped_by``, when given, is told why a
    walk stopped short. Where it stopped short, every word from there up counts. Where it ended, every word above the
    last frame counts as well: that end is an address the thread's own code can put on its stack (a return into the C
    library's thread start), and above a real thread's first frame lie only the thread's own records."""
    found = [pc]
    if platform.machine() != "x86_64":
        return Frames(found, sp, False)
    walk = _Walk(pid, sp, stack, mappings)
    try:
        above = walk.frames(pc, sp)
        return Frames(found + above, walk.top, True)
    except _Unwalkable as e:
        if stopped_by is not None:
            stopped_by.append(str(e))
        if walk.interrupted is not None:
            return Frames(found + walk.deepest, sp if walk.inferred else walk.deepest_sp, False, walk.interrupted)
        if walk.inferred:
            # A frame pointer was inferred: what the walk read may not be frames, so all of the stack counts.
            return Frames(found, sp, False)
        return Frames(found + walk.deepest, walk.deepest_sp, False)


class _Walk:
    """One thread's frames, walked outwards. Code built with frame pointers (Ubuntu's libraries) finds each frame
    through its frame pointer, a register /proc does not show. In the first frame that sets one it is inferred: from
    the function's prologue where that can be read (:func:`_prologue_depth`), else as the first slot above the frame's
    bottom that holds a frame record (the caller's frame pointer, then a return address just after a call, in a
    file's code). That one is kept whatever follows: if the walk from it fails, every word of the stack counts, so a
    record the thread's own code wrote higher up, beyond a frame the walk could not pass, never stands in for its
    frames. Further out, each frame pointer is read from the slot its callee saved it in, as the rules say."""

    def __init__(self, pid: int, sp: int, stack: bytes, mappings: list[Mapping]) -> None:
        self.pid, self.sp, self.stack, self.mappings = pid, sp, stack, mappings
        self.starts = [m.start for m in mappings]
        self.deepest: list[int] = []  # the return addresses of the longest walk that failed
        self.deepest_sp = sp
        self.inferred = False  # whether a frame pointer was inferred rather than read
        self.top = sp  # the last frame's CFA, once the walk ends
        self.interrupted: tuple[int, int] | None = None
        self.images: dict[int, _Image] = {}  # by mapping start: a frame's file is opened once a walk, not per frame

    def frames(self, here: int, rsp: int) -> list[int]:
        """The return addresses above the innermost frame, at ``here`` (as :func:`live_frames` reads them), or
        _Unwalkable."""
        found: list[int] = []
        rbp: int | None = None
        first = True
        try:
            for _ in range(MAX_FRAMES):
                m, image, row = self._row(here if first else here - 1)
                if row.signal:
                    # The handler returned into the signal's trampoline: at the stack pointer lies the kernel's
                    # record of the interrupted context (ucontext_t: its registers 40 bytes in, RSP the 16th, RIP the
                    # 17th). Its frames are read from there, on whatever stack they are, every word counting.
                    regs = rsp + _UC_GREGS
                    self.interrupted = (_word(self.stack, self.sp, regs + 120), _word(self.stack, self.sp, regs + 128))
                    raise _Unwalkable("a signal's frame")
                if row.cfa_reg == _RBP and rbp is None:
                    # No frame inside this one saved the frame pointer (none set one): it is still this frame's.
                    self.inferred = True
                    rbp = self._frame_pointer(image, row, rsp, (here if first else here - 1) - m.start + m.offset)
                base = rsp if row.cfa_reg == _RSP else rbp if row.cfa_reg == _RBP else None
                if base is None:
                    raise _Unwalkable("the frame's CFA rests on a register not followed here")
                cfa = base + row.cfa_off
                ra_rule = row.rules.get(_RA, ("unknown", 0))
                if ra_rule[0] == "undefined":
                    self.top = cfa
                    return found
                if ra_rule[0] != "off":
                    raise _Unwalkable("a return address kept other than on the stack")
                ra = _word(self.stack, self.sp, cfa + ra_rule[1])
                rbp_rule = row.rules.get(_RBP, ("same", 0))
                if rbp_rule[0] == "off":
                    rbp = _word(self.stack, self.sp, cfa + rbp_rule[1])
                elif rbp_rule[0] != "same":
                    rbp = None
                if cfa <= rsp:
                    raise _Unwalkable("a frame that does not move up the stack")
                rsp, here, first = cfa, ra, False
                found.append(ra)
            raise _Unwalkable(f"more than {MAX_FRAMES} frames")
        except (_Unwalkable, struct.error, IndexError, ValueError, OSError) as e:
            if len(found) > len(self.deepest):
                self.deepest, self.deepest_sp = found, rsp
            raise e if isinstance(e, _Unwalkable) else _Unwalkable(f"{type(e).__name__}: {e}") from e

    def _frame_pointer(self, image: _Image, row: _Row, rsp: int, pc_offset: int) -> int:
        try:
            rbp = rsp + _prologue_depth(image, row.start, pc_offset)
            if self._is_record(rbp):
                return rbp
        except _Unwalkable:
            pass
        for slot in range(rsp, min(rsp + FRAME_POINTER_REACH, self.sp + len(self.stack) - 15), 8):
            if self._is_record(slot):
                return slot
        raise _Unwalkable("no frame record above a frame resting on its frame pointer")

    def _is_record(self, slot: int) -> bool:
        """Whether ``slot`` holds a frame record: the caller's frame pointer (above it, in the stack) or none, then a
        return address right after a call instruction in a file's code."""
        try:
            saved, ra = _word(self.stack, self.sp, slot), _word(self.stack, self.sp, slot + 8)
            if saved and not slot < saved < self.sp + len(self.stack):
                return False
            m = _mapping_of(self.mappings, self.starts, ra)
            image = self._image_of(m)
            return _after_call(image.read(_vaddr_of(image, ra - 7 - m.start + m.offset), 7))
        except (_Unwalkable, struct.error, IndexError, ValueError, OSError):
            return False

    def _row(self, address: int) -> tuple[Mapping, _Image, _Row]:
        m = _mapping_of(self.mappings, self.starts, address)
        image = self._image_of(m)
        return m, image, image.row(_vaddr_of(image, address - m.start + m.offset))

    def _image_of(self, m: Mapping) -> _Image:
        if m.start not in self.images:
            self.images[m.start] = _image(self.pid, m)
        return self.images[m.start]


def _after_call(before: bytes) -> bool:
    """Whether the 7 bytes before a return address end with a call: ``call rel32`` or ``call`` through a register
    or memory (``ff /2``, with or without a REX prefix, a SIB byte or a displacement)."""
    if before[2] == 0xE8:
        return True
    for at in (5, 4, 3, 1, 0):  # where an ff /2 whose operand ends at the return address would begin
        if before[at] == 0xFF and (before[at + 1] >> 3) & 7 == 2:
            mod, rm = before[at + 1] >> 6, before[at + 1] & 7
            length = 2 + (rm == 4 and mod != 3) + {0: 4 if rm == 5 else 0, 1: 1, 2: 4, 3: 0}[mod]
            if at + length == 7:
                return True
    return False


def _prologue_depth(image: _Image, start: int, pc_offset: int) -> int:
    """How far above the stack pointer a function built with a frame pointer keeps it, at file offset ``pc_offset``
    (a point past its prologue where it waits in a system call): from its first bytes (``start``, a virtual address),
    ``endbr64``, ``push %rbp``, ``mov %rsp,%rbp``, then each register pushed and the ``sub $n,%rsp`` that follow.
    Anything else there is not read, and the walk ends."""
    pc = _vaddr_of(image, pc_offset)
    code = image.read(start, max(0, min(pc - start, PROLOGUE_BYTES)))
    k = 4 if code.startswith(b"\xf3\x0f\x1e\xfa") else 0
    if code[k : k + 4] != b"\x55\x48\x89\xe5":
        raise _Unwalkable("a prologue of a form not read here")
    k += 4
    depth = 0
    while k < len(code):
        if 0x50 <= code[k] <= 0x57:  # push of a register
            depth, k = depth + 8, k + 1
        elif code[k] == 0x41 and k + 1 < len(code) and 0x50 <= code[k + 1] <= 0x57:  # push of r8-r15
            depth, k = depth + 8, k + 2
        elif code[k : k + 3] == b"\x48\x83\xec" and k + 3 < len(code):  # sub $imm8,%rsp
            depth, k = depth + code[k + 3], k + 4
        elif code[k : k + 3] == b"\x48\x81\xec" and k + 7 <= len(code):  # sub $imm32,%rsp
            depth, k = depth + struct.unpack_from("<I", code, k + 3)[0], k + 7
        else:
            break
    return depth


def _mapping_of(mappings: list[Mapping], starts: list[int], address: int) -> Mapping:
    at = bisect.bisect_right(starts, address) - 1
    if at < 0 or address >= mappings[at].end or not (mappings[at].path.startswith("/") or mappings[at].path == VDSO):
        raise _Unwalkable(f"{address:#x} is in no file's code")
    return mappings[at]


def _vaddr_of(image: _Image, file_offset: int) -> int:
    for vaddr, offset, size in image.loads:
        if offset <= file_offset < offset + size:
            return vaddr + file_offset - offset
    raise _Unwalkable("an address in no loaded part of its file")


def _word(stack: bytes, sp: int, address: int) -> int:
    k = address - sp
    if k < 0 or k + 8 > len(stack):
        raise _Unwalkable("a slot outside the live stack")
    return int.from_bytes(stack[k : k + 8], "little")
