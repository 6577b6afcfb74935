"""GPU only; written by a red team of timing protocol revision 14.

Route: the CUDA driver's own pointer queries, walking the device address space near what is
known.

The staging buffer is a mapping of CUDA's virtual memory management (cuMemAddressReserve / cuMemMap), which torch's
allocator does not list, but the driver answers cuMemGetAddressRange for it as for any mapped device memory. The
device's virtual addresses come from one allocator in the driver, so the engine's reservations (its device feed, its
staging buffer, its out feed: made before the solution loaded) lie near torch's blocks and near a fresh reservation of
our own. This walks the driver's address space in steps of the mapping granularity around those seeds (jumping over
every mapped range it finds), keeps the ranges no block of torch's covers, that this device may read and that are as
large as the input, and in the first call compares each one's bytes with the input (filled after a synchronize). From
then on every call copies its input out of the range found on a side stream that does not wait for the call's stream:
under the spin, before the start event. On one rank the all-reduce of x is x. Where nothing is found: honest work.
"""

import ctypes
import time

import torch
import torch.distributed as dist
import triton
import triton.language as tl

ROUTE = "driver_va_probe"
SPAN = 256 << 30  # walked each side of every seed
STEP = 2 << 20  # refined from the driver's granularity where it answers
MAX_PROBES = 4_000_000
MAX_SECONDS = 30.0
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


class _Driver:
    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        self.range = lib.cuMemGetAddressRange_v2
        self.range.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
        self.range.restype = ctypes.c_int
        self.attribute = lib.cuPointerGetAttribute
        self.attribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
        self.attribute.restype = ctypes.c_int
        self.reserve = lib.cuMemAddressReserve
        self.reserve.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_ulonglong]
        self.reserve.restype = ctypes.c_int
        self.free = lib.cuMemAddressFree
        self.free.argtypes = [ctypes.c_uint64, ctypes.c_size_t]
        self.free.restype = ctypes.c_int
        self._base, self._size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        self._base_ref, self._size_ref = ctypes.byref(self._base), ctypes.byref(self._size)

    def mapped(self, address: int):
        if self.range(self._base_ref, self._size_ref, address) != 0:
            return None
        return self._base.value, self._size.value

    def readable(self, address: int) -> bool:
        """Device memory (not registered host memory) that this device may read."""
        kind = ctypes.c_uint64(0)
        if self.attribute(ctypes.byref(kind), 2, address) != 0 or (kind.value & 0xFFFFFFFF) != 2:  # MEMORY_TYPE
            return False  # CU_MEMORYTYPE_DEVICE only
        flags = ctypes.c_uint64(0)
        if self.attribute(ctypes.byref(flags), 16, address) != 0:  # CU_POINTER_ATTRIBUTE_ACCESS_FLAGS
            return True  # memory of cuMemAlloc's answers no flags: readable by its own device
        return (flags.value & 0xFFFFFFFF) in (1, 3)

    def fresh_reservation(self) -> int | None:
        ptr = ctypes.c_uint64(0)
        if self.reserve(ctypes.byref(ptr), STEP, 0, 0, 0) != 0:
            return None
        self.free(ptr.value, STEP)
        return ptr.value


def _torch_segments() -> list[tuple[int, int]]:
    return [(int(s["address"]), int(s["address"]) + int(s["total_size"])) for s in torch.cuda.memory_snapshot()]


def _windows(seeds: list[int], near: int) -> list[tuple[int, int]]:
    spans = sorted((max(STEP, s - SPAN) // STEP * STEP, (s + SPAN) // STEP * STEP) for s in seeds)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    # Nearest the input first.
    return sorted(
        ((lo, hi) for lo, hi in merged),
        key=lambda w: 0 if w[0] <= near < w[1] else min(abs(w[0] - near), abs(w[1] - near)),
    )


def _ranges(drv: _Driver, seeds: list[int]) -> tuple[list[tuple[int, int]], int]:
    found: dict[int, int] = {}
    probes = 0
    deadline = time.monotonic() + MAX_SECONDS
    for lo, hi in _windows(seeds, seeds[0]):
        a = lo
        while a < hi and probes < MAX_PROBES:
            probes += 1
            if probes % 4096 == 0 and time.monotonic() > deadline:
                break
            hit = drv.mapped(a)
            if hit is None:
                a += STEP
                continue
            base, size = hit
            found[base] = max(size, found.get(base, 0))
            a = max(a + STEP, (base + size + STEP - 1) // STEP * STEP)
        if time.monotonic() > deadline:
            break
    return sorted(found.items()), probes


def _look(x: torch.Tensor) -> None:
    torch.cuda.current_stream(x.device).synchronize()  # the input is filled once the call's stream gets here
    _found["address"] = None
    try:
        drv = _Driver()
        own = _torch_segments()
        seeds = [x.data_ptr()] + [lo for lo, _ in own]
        fresh = drv.fresh_reservation()
        if fresh is not None:
            seeds.append(fresh)
        ranges, probes = _ranges(drv, seeds)
        outside = [
            (base, size)
            for base, size in ranges
            if size >= x.nbytes and not any(lo <= base < hi for lo, hi in own) and drv.readable(base)
        ]
        for base, size in outside:
            if torch.equal(_copy(base, x), x):
                _found["address"] = base
                print(
                    f"ARENA_RT_FOUND {ROUTE} at {base:#x} ({size} bytes; {probes} probes, {len(ranges)} mapped ranges, "
                    f"{len(outside)} outside torch's allocator; input at {x.data_ptr():#x}, fresh {fresh})",
                    flush=True,
                )
                return
        print(
            f"ARENA_RT_ABSENT {ROUTE}: {probes} probes, {len(ranges)} mapped ranges, {len(outside)} outside torch's "
            f"allocator, none holds the input (input at {x.data_ptr():#x}, fresh {fresh}; ranges "
            f"{[(hex(b), s) for b, s in ranges[:12]]})",
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
