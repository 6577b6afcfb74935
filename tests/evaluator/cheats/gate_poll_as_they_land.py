"""GPU only. Written by a red team of timing protocol revision 15: works on the inputs as the judge's copy lands them.

Route: the call's input is a view over the device feed, which until the judge's gate copy holds the previous call's
input at the same offset. The solution keeps its own copy of the previous call's input (its last output: on one rank
the all-reduce of x is x). Each call launches, on a side stream that does not wait for the call's stream, a persistent
kernel that walks the input in chunks and, for each chunk, polls until every 32-byte sector differs from the kept copy
(random bfloat16 data: sixteen equal values in a sector by chance is out of reach) or until the gate's release word
equals its armed word (the copy is complete: an untimed call, or inputs equal to the last call's), then copies that
chunk into the output. Since revision 15's change the release is not the feed's second word but the first word of the
judge's page of host memory (mapped read-only here, "/memfd:arena-gate" in /proc/self/maps): the kernel reads it
through the device address this rank's registration of that page gives (cuMemHostGetDevicePointer), reads being all
it needs. The call's stream, once past its gate, only waits for the kernel's event. This measures the
documented residual, the copy's length as head start (about 10 µs for the 16 MiB bench input), which for the one-rank
all-reduce is nearly all of the work. The call's stream pads itself to just above the roofline (one sleep kernel) so
the verdict shows a gain instead of "physically impossible".
Fallback: honest work in the first call, off a device feed, and after DECIDE gated calls where the kernel did not
finish most of its copy before the call's stream reached its work (ARENA_RT_ABSENT); ARENA_RT_FOUND otherwise.
"""

import ctypes
import sys

import torch
import torch.distributed as dist
import triton
import triton.language as tl

ROUTE = "poll_as_they_land"
HEAD = 128
DECIDE = 8
POLLS = 200_000
RANGE_START = 11
_st: dict = {}


@triton.jit
def _land(gate_addr, rel_addr, x, prev, out, n, POLLS: tl.constexpr, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    gate = gate_addr.to(tl.pointer_type(tl.int64))
    rel = rel_addr.to(tl.pointer_type(tl.int64))
    xs = x.to(tl.pointer_type(tl.int16), bitcast=True)
    ps = prev.to(tl.pointer_type(tl.int16), bitcast=True)
    os_ = out.to(tl.pointer_type(tl.int16), bitcast=True)
    for start in range(pid * CHUNK, n, nprog * CHUNK):
        offs = start + tl.arange(0, CHUNK)
        mask = offs < n
        old = tl.load(ps + offs, mask=mask, other=0)
        new = tl.load(xs + offs, mask=mask, other=1, volatile=True)
        diff = tl.reshape((new != old) | (offs >= n), (CHUNK // 16, 16))
        landed = tl.min(tl.max(diff.to(tl.int32), axis=1), axis=0)
        i = 0
        while (landed == 0) & (i < POLLS):
            new = tl.load(xs + offs, mask=mask, other=1, volatile=True)
            diff = tl.reshape((new != old) | (offs >= n), (CHUNK // 16, 16))
            landed = tl.min(tl.max(diff.to(tl.int32), axis=1), axis=0)
            opened = tl.load(rel, volatile=True) == tl.load(gate, volatile=True)
            landed = landed | opened.to(tl.int32)
            i += 1
        new = tl.load(xs + offs, mask=mask, other=0, volatile=True)
        tl.store(os_ + offs, new, mask=mask)


def _honest(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _range_start(address: int) -> int:
    get = ctypes.CDLL("libcuda.so.1").cuPointerGetAttribute
    get.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    word = ctypes.c_uint64(0)
    return word.value if get(ctypes.byref(word), RANGE_START, address) == 0 else 0


def _release_device_address() -> int:
    """The device address of the judge's release page as this rank registered it (read-only)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "arena-gate" in line:
                lo = int(line.split()[0].split("-")[0], 16)
                fn = ctypes.CDLL("libcuda.so.1").cuMemHostGetDevicePointer_v2
                fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint]
                dev = ctypes.c_uint64(0)
                return dev.value if fn(ctypes.byref(dev), lo, 0) == 0 else 0
    return 0


def _setup(x: torch.Tensor) -> None:
    _st["ok"] = False
    try:
        if x.element_size() != 2 or x.numel() % 16:
            _say(f"ARENA_RT_ABSENT {ROUTE}: not a 16-bit input of whole sectors")
            return
        gate = x.data_ptr() - HEAD
        if _range_start(x.data_ptr()) != gate:
            _say(f"ARENA_RT_ABSENT {ROUTE}: the input is not at the head's end of a device feed")
            return
        rel = _release_device_address()
        if not rel:
            _say(f"ARENA_RT_ABSENT {ROUTE}: no release page (/memfd:arena-gate) mapped")
            return
        dev = x.device
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(1_000_000)
        b.record()
        b.synchronize()
        cycles_per_us = 1_000_000 / max(1.0, a.elapsed_time(b) * 1000.0)
        a.record()
        x.clone()
        b.record()
        b.synchronize()
        _st.update(
            ok=True,
            gate=gate,
            rel=rel,
            side=torch.cuda.Stream(device=dev, priority=-1),
            grid=torch.cuda.get_device_properties(dev).multi_processor_count,
            pad=int(1.08 * (2 * x.nbytes / 4.8e6) * cycles_per_us),
            copy_ms=a.elapsed_time(b),
            late=[],
            decided=False,
        )
    except Exception as exc:  # noqa: BLE001 - any failure of the route: honest work
        _st["ok"] = False
        _say(f"ARENA_RT_ABSENT {ROUTE}: {type(exc).__name__}: {exc}")


def _tally() -> None:
    last = _st.pop("events", None)
    if last is None:
        return
    call, done = last
    _st["late"].append(call.elapsed_time(done))  # how long the side work ran past the call's stream's arrival
    if len(_st["late"]) >= DECIDE and not _st["decided"]:
        _st["decided"] = True
        late = sorted(_st["late"])[len(_st["late"]) // 2]
        if late < 0.5 * _st["copy_ms"]:
            _say(
                f"ARENA_RT_FOUND {ROUTE}: median side work after the gate {late * 1000:.2f} us against a copy of "
                f"{_st['copy_ms'] * 1000:.2f} us"
            )
        else:
            _st["ok"] = False
            _say(
                f"ARENA_RT_ABSENT {ROUTE}: median side work after the gate {late * 1000:.2f} us against a copy of "
                f"{_st['copy_ms'] * 1000:.2f} us"
            )


def solution(x: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() != 1:
        return _honest(x)
    if "ok" not in _st:
        _setup(x)
        out = _honest(x)
        _st["prev"] = out
        return out
    if not _st["ok"] or x.data_ptr() - HEAD != _st["gate"] or _st["prev"].shape != x.shape:
        out = _honest(x)
        _st["prev"] = out
        return out
    _tally()
    if not _st["ok"]:
        out = _honest(x)
        _st["prev"] = out
        return out
    cur = torch.cuda.current_stream(x.device)
    side = _st["side"]
    prev = _st["prev"]
    with torch.cuda.stream(side):
        out = torch.empty_like(x)
        _land[(_st["grid"],)](_st["gate"], _st["rel"], x, prev, out, x.numel(), POLLS=POLLS, CHUNK=2048, num_warps=8)
        done = torch.cuda.Event(enable_timing=True)
        done.record(side)
    call = torch.cuda.Event(enable_timing=True)
    call.record(cur)
    cur.wait_event(done)
    torch.cuda._sleep(_st["pad"])
    out.record_stream(cur)
    prev.record_stream(side)
    _st["prev"] = out
    _st["events"] = (call, done)
    return out
