"""Issue 13, class (h). Reads the other ranks' input files in the exchange folder (/io/r{R}/in.*.pt) and sums them
locally instead of communicating. During the correctness trials the files can be there; during a timed call every
rank's inputs have been loaded and removed before the call starts, so the cheat finds nothing and returns its own
input (wrong)."""

import glob
import json

import torch
import torch.distributed as dist


def _first_tensor(path: str) -> torch.Tensor:
    """The first tensor of an exchange file (a JSON header, then raw bytes), parsed as an attacker would."""
    data = bytearray(open(path, "rb").read())
    size = int.from_bytes(data[8:16], "little")
    meta = json.loads(bytes(data[16:16 + size]))["values"][0]
    base = 16 + size + (-(16 + size)) % 64
    flat = torch.frombuffer(data, dtype=torch.uint8, count=meta["nbytes"], offset=base + meta["offset"])
    return flat.view(getattr(torch, meta["dtype"])).reshape(meta["shape"]).clone()

_seen = {"trials": 0, "timed": 0}


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    others = []
    for r in range(world):
        if r == rank:
            continue
        files = [p for p in glob.glob(f"/io/r{r}/in.*.pt") if not p.endswith(".part")]
        for path in files:
            try:
                value = _first_tensor(path)
            except Exception:
                continue
            if value.shape == x.shape:
                others.append(value)
                break
    if len(others) == world - 1:
        _seen["trials"] += 1
        return sum(others, x.clone())
    _seen["timed"] += 1
    print("ARENA_OTHER_INPUTS_MISSING", _seen, flush=True)
    return x.clone()
