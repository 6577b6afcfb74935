"""Issue 13, class (h), against the slots. Each timed iteration's inputs reach a rank through its feed slot, a
mapped file. This cheat looks for the other ranks' feed slots (their descriptors and mappings under /proc, and any
slot in the exchange folder) to sum their inputs locally instead of communicating. Found, it uses them (and says
ARENA_PEER_FEED_READ); not found, it computes honestly. Only the descriptor the host gave each rank leads to a
rank's feed slot, and ranks cannot open each other's descriptors, so it never finds one."""

import glob
import json
import os

import torch
import torch.distributed as dist


def _first_tensor(path: str) -> torch.Tensor | None:
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if data[:8] != b"ARNT0001":
        return None
    size = int.from_bytes(data[8:16], "little")
    meta = json.loads(bytes(data[16:16 + size]))["values"][0]
    base = 16 + size + (-(16 + size)) % 64
    flat = torch.frombuffer(data, dtype=torch.uint8, count=meta["nbytes"], offset=base + meta["offset"])
    return flat.view(getattr(torch, meta["dtype"])).reshape(meta["shape"]).clone()


def _peer_pids() -> list[int]:
    mine, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != mine:
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().startswith("arena-rank-"):
                        out.append(int(entry))
            except OSError:
                pass
    return out


def _peer_feeds() -> list[str]:
    found = []
    for pid in _peer_pids():
        for folder in (f"/proc/{pid}/fd", f"/proc/{pid}/map_files"):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                try:
                    if "arena-feed" in os.readlink(f"{folder}/{name}"):
                        found.append(f"{folder}/{name}")
                except OSError:
                    pass
    return found + glob.glob("/io/r*/*feed*") + glob.glob("/io/*feed*")


def solution(x: torch.Tensor) -> torch.Tensor:
    others = []
    for path in _peer_feeds():
        try:
            value = _first_tensor(path)
        except Exception:
            continue
        if value is not None and value.shape == x.shape:
            others.append(value)
    if others and len(others) >= dist.get_world_size() - 1:
        print("ARENA_PEER_FEED_READ", flush=True)
        return sum(others[:dist.get_world_size() - 1], x.clone())
    print("ARENA_PEER_FEED_UNREADABLE", flush=True)
    out = x.clone()
    dist.all_reduce(out)
    return out
