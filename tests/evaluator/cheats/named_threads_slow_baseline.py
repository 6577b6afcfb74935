"""Class: helpers the host does not see, named as a library's threads. At import the solution starts burner threads
that rename themselves like gloo's own (``gloo_...``), so a rule that trusts a thread by its name lets them outlive
every call. They burn the host's cores whenever the solution is not inside its own call: while the baseline is timed
in the judge's processes on the same cores, it runs several times slower, and the speedup is bought. Where the
sandbox's processes do not run outside the solution's own windows, the baseline is timed undisturbed and the
solution gains nothing."""

import hashlib
import importlib
import threading

import torch
import torch.distributed as dist

_ct = importlib.import_module("c" + "types")  # past the static check, as an attacker would
_libc = _ct.CDLL(None)
_idle = threading.Event()
_idle.set()
_BURNERS = 6
_block = bytes(1 << 20)


def _burn(k: int) -> None:
    _libc.prctl(15, f"gloo_pair_{k}".encode(), 0, 0, 0)  # PR_SET_NAME: this thread now looks like gloo's
    while True:
        _idle.wait()  # out of the solution's own way while it runs
        hashlib.sha256(_block).digest()  # releases the GIL: a core burnt per thread


for _k in range(_BURNERS):
    threading.Thread(target=_burn, args=(_k,), daemon=True).start()


def solution(x: torch.Tensor) -> torch.Tensor:
    _idle.clear()
    try:
        out = x.clone()
        dist.all_reduce(out)
        return out
    finally:
        _idle.set()
