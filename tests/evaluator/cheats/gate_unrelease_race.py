"""GPU only. Written by a red team of timing protocol revision 15: races the call's own stream for the gate's release.

Route: the device feed's first two words are the gate (armed at +0, released at +8), and the feed is mapped read and
write in this process (the input's data pointer less the frame's 128-byte head is the range start the driver reports).
The call's stream writes this call's token to the armed word as it reaches the gate, before the solution's kernels can
run, so the token needs no search: it is the armed word once that word differs from the last call's token. A kernel
on a side stream that does not wait for the call's stream polls the armed word, then spins on an atomic
compare-and-swap of the released word from the token back to zero: the moment the judge's release lands, the kernel
takes it back. Where the kernel wins against the call's stream's own wait (a front-end semaphore poll), the call's
stream stays at its gate while the kernel copies the input (now all landed: the judge writes the release after its
copies) into the output, and only then writes the token back as the release: the start event fires after the work.
The gate's check (armed to start at least half the spin) holds, since the judge's spin itself came first.
Expected gain where it wins: the whole copy leaves the sample; the call's stream pads itself to just above the
roofline (one sleep kernel) so the verdict shows a gain instead of "physically impossible".
Where it loses, the call's stream passes at the judge's release and waits for the side kernel's copy: no gain, correct.
After DECIDE gated calls it prints ARENA_RT_FOUND (the side work ended before the start event in most calls) or
ARENA_RT_ABSENT and from then on does honest work. Not a gated feed (no range at the input less 128): honest work.
On one rank the all-reduce of x is x.
"""

import ctypes
import sys

import torch
import torch.distributed as dist
import triton
import triton.language as tl

ROUTE = "unrelease_race"
HEAD = 128  # padded(16 + 1 * 96): one input's frame head; the token is its last 8 bytes
DECIDE = 8
LIMIT = 4_000_000
RANGE_START = 11
_st: dict = {}


@triton.jit
def _race(gate_addr, x, out, n, state, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    gate = gate_addr.to(tl.pointer_type(tl.int64))
    if pid == 0:
        prev = tl.load(state + 0, volatile=True)
        a = tl.load(gate, volatile=True)
        i = 0
        while (a == prev) & (i < LIMIT):
            a = tl.load(gate, volatile=True)
            i += 1
        old = tl.atomic_cas(gate + 1, a, 0)
        j = 0
        while (old != a) & (j < LIMIT):
            old = tl.atomic_cas(gate + 1, a, 0)
            j += 1
        tl.store(state + 4, a)
        tl.store(state + 5, i)
        tl.store(state + 6, j)
        tl.atomic_xchg(state + 1, 1)
    else:
        g = tl.load(state + 1, volatile=True)
        k = 0
        while (g == 0) & (k < LIMIT):
            g = tl.load(state + 1, volatile=True)
            k += 1
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask, volatile=True), mask=mask)
    done = tl.atomic_add(state + 2, 1)
    if done == nprog - 1:
        tok = tl.load(state + 4, volatile=True)
        tl.atomic_xchg(gate + 1, tok)  # the release, given back once the work is done
        tl.store(state + 0, tok)
        tl.atomic_xchg(state + 1, 0)
        tl.atomic_xchg(state + 2, 0)


@triton.jit
def _save_token(gate_addr, state):
    gate = gate_addr.to(tl.pointer_type(tl.int64))
    tl.store(state + 0, tl.load(gate, volatile=True))


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


def _setup(x: torch.Tensor) -> None:
    _st["ok"] = False
    try:
        gate = x.data_ptr() - HEAD
        if _range_start(x.data_ptr()) != gate:
            _say(f"ARENA_RT_ABSENT {ROUTE}: the input is not at the head's end of a device feed")
            return
        dev = x.device
        _st.update(
            ok=True,
            gate=gate,
            side=torch.cuda.Stream(device=dev, priority=-1),
            state=torch.zeros(8, dtype=torch.int64, device=dev),
            grid=torch.cuda.get_device_properties(dev).multi_processor_count,
            won=[],
            decided=False,
        )
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(1_000_000)
        b.record()
        b.synchronize()
        _st["cycles_per_us"] = 1_000_000 / max(1.0, a.elapsed_time(b) * 1000.0)
        roof_us = 2 * x.nbytes / 4.8e6  # the profile's HBM roofline for W=1: read x, write out
        _st["pad"] = int(1.08 * roof_us * _st["cycles_per_us"])
    except Exception as exc:  # noqa: BLE001 - any failure of the route: honest work
        _st["ok"] = False
        _say(f"ARENA_RT_ABSENT {ROUTE}: {type(exc).__name__}: {exc}")


def _tally() -> None:
    """The previous call's events (complete: the step ended with a synchronize): did the side work end before the
    call's stream reached its own work (the start event's neighbour)?"""
    last = _st.pop("events", None)
    if last is None:
        return
    done, call = last
    _st["won"].append(done.elapsed_time(call))  # > 0: done before the call's stream got past its gate
    if len(_st["won"]) >= DECIDE and not _st["decided"]:
        _st["decided"] = True
        won = [w for w in _st["won"] if w > 0]
        if len(won) * 2 > len(_st["won"]):
            _say(f"ARENA_RT_FOUND {ROUTE}: side work ended before the gate opened in {len(won)}/{len(_st['won'])} "
                 f"calls (head start ms {sorted(won)[len(won) // 2]:.4f})")
        else:
            _st["ok"] = False
            _say(f"ARENA_RT_ABSENT {ROUTE}: the call's stream won the release in {len(_st['won']) - len(won)}/"
                 f"{len(_st['won'])} calls")


def solution(x: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() != 1:
        return _honest(x)
    if "ok" not in _st:
        _setup(x)
        out = _honest(x)
        if _st["ok"]:
            _save_token[(1,)](_st["gate"], _st["state"])
        return out
    if not _st["ok"] or x.data_ptr() - HEAD != _st["gate"]:
        return _honest(x)
    _tally()
    if not _st["ok"]:
        return _honest(x)
    cur = torch.cuda.current_stream(x.device)
    side = _st["side"]
    with torch.cuda.stream(side):
        out = torch.empty_like(x)
        _race[(_st["grid"],)](_st["gate"], x, out, x.numel(), _st["state"], LIMIT=LIMIT, BLOCK=4096, num_warps=8)
        done = torch.cuda.Event(enable_timing=True)
        done.record(side)
    call = torch.cuda.Event(enable_timing=True)
    call.record(cur)
    cur.wait_event(done)
    torch.cuda._sleep(_st["pad"])
    out.record_stream(cur)
    _st["events"] = (done, call)
    return out
