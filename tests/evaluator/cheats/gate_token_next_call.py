"""GPU only. Written by a red team of timing protocol revision 15: tries to know a call's gate token before the call.

Route: a token known ahead could be written to the armed word at the very start of the call (or at the end of the
previous one), so the judge's gate stream would spin and copy before the call's stream even reached its gate, with no
search of the engine's stack and no race. Every call reads, after its honest work on the call's stream, the armed
word (the device feed's first word, which holds the call's token once its stream passed the gate) into pinned host
memory, and the next call tests simple predictors on the tokens seen so far: equal to the last, the last plus one,
splitmix64 / xorshift64 of the last, a linear congruence fitted on three, a counter in some bits. A predictor that
holds for every pair seen would be used, and is reported as ARENA_RT_FOUND with the rule; tokens from os.urandom hold
none, which is ARENA_RT_ABSENT (expected). Even a predicted token forged ahead would open the gate before the call's
stream reached it, which the host refuses (timing_pass._short_gate: the gate wait below half the spin), unless combined
with the hold of gate_forge_armed_with_hog.py (and gate_armed_event_rerecord.py). The armed word is still the device
feed's first word; since revision 15's change the release is in the judge's page of host memory, not read here.
The work is honest in every call: the verdict must show no gain.
"""

import ctypes
import sys

import torch
import torch.distributed as dist
import triton
import triton.language as tl

ROUTE = "token_prediction"
HEAD = 128
DECIDE = 10
RANGE_START = 11
M64 = (1 << 64) - 1
_st: dict = {}


@triton.jit
def _save_token(gate_addr, dst, k):
    gate = gate_addr.to(tl.pointer_type(tl.int64))
    tl.store(dst + k, tl.load(gate, volatile=True))


def _range_start(address: int) -> int:
    get = ctypes.CDLL("libcuda.so.1").cuPointerGetAttribute
    get.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    word = ctypes.c_uint64(0)
    return word.value if get(ctypes.byref(word), RANGE_START, address) == 0 else 0


def _splitmix(v: int) -> int:
    v = (v + 0x9E3779B97F4A7C15) & M64
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & M64
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & M64
    return v ^ (v >> 31)


def _xorshift(v: int) -> int:
    v ^= (v << 13) & M64
    v ^= v >> 7
    return v ^ ((v << 17) & M64)


def _predictors(tokens: list[int]) -> list[str]:
    pairs = list(zip(tokens, tokens[1:]))
    rules = {
        "same": lambda a: a,
        "plus_one": lambda a: (a + 1) & M64,
        "splitmix64": _splitmix,
        "xorshift64": _xorshift,
    }
    held = [name for name, f in rules.items() if all(f(a) == b for a, b in pairs)]
    if len(tokens) >= 4:  # b = m*a + c mod 2^64 fitted on the first three, where m is solvable
        a0, a1, a2 = tokens[:3]
        d = (a1 - a0) & M64
        if d & 1:
            m = ((a2 - a1) * pow(d, -1, 1 << 64)) & M64
            c = (a1 - m * a0) & M64
            if all((m * a + c) & M64 == b for a, b in pairs):
                held.append(f"lcg m={m:#x} c={c:#x}")
    diffs = {(b - a) & M64 for a, b in pairs}
    if len(diffs) == 1:
        held.append(f"constant step {next(iter(diffs)):#x}")
    return held


def _tally() -> None:
    n = _st["n"]
    tokens = [int(v) & M64 for v in _st["seen"][:n].tolist()]
    tokens = [t for t in tokens if t]
    if len(tokens) < DECIDE or _st["decided"]:
        return
    _st["decided"] = True
    held = _predictors(tokens)
    distinct = len(set(tokens))
    if held:
        print(f"ARENA_RT_FOUND {ROUTE}: {held} over {len(tokens)} tokens", file=sys.stderr, flush=True)
    else:
        print(
            f"ARENA_RT_ABSENT {ROUTE}: {len(tokens)} tokens, {distinct} distinct, no predictor holds "
            f"(first {tokens[0]:#018x}, last {tokens[-1]:#018x})",
            file=sys.stderr,
            flush=True,
        )


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    if dist.get_world_size() != 1:
        return out
    if "ok" not in _st:
        gate = x.data_ptr() - HEAD
        _st["ok"] = _range_start(x.data_ptr()) == gate
        if not _st["ok"]:
            print(f"ARENA_RT_ABSENT {ROUTE}: not a device feed", file=sys.stderr, flush=True)
            return out
        _st.update(
            gate=gate,
            n=0,
            decided=False,
            dev=torch.zeros(64, dtype=torch.int64, device=x.device),
            seen=torch.zeros(64, dtype=torch.int64, pin_memory=True),
        )
    if not _st["ok"] or x.data_ptr() - HEAD != _st["gate"]:
        return out
    _tally()  # the previous calls' tokens: in pinned memory since their steps ended with a synchronize
    k = _st["n"]
    if k < 64:
        _save_token[(1,)](_st["gate"], _st["dev"], k)
        _st["seen"][k : k + 1].copy_(_st["dev"][k : k + 1], non_blocking=True)
        _st["n"] = k + 1
    return out
