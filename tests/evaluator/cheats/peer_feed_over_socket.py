"""Class: feed descriptors passed between ranks. Each rank hands the others every descriptor it holds (its feed slot
among them) over a Unix socket with SCM_RIGHTS during its first call; from then on a rank reads its peers' inputs from
their feed slots and sums them locally instead of communicating. Each rank's engine zeroes its feed once the call's
inputs are in their own storage, before the alignment that opens every rank's timed call, so what a peer finds there
is zeros: the local sum is wrong and the cheat falls back to communicating (it says ARENA_PEER_FEED_EMPTY). And with
the ranks stopped after the call the host finds a peer's feed among the rank's descriptors, and refuses it then."""

import array
import importlib
import os
import struct

import torch
import torch.distributed as dist

socket = importlib.import_module("so" + "cket")  # past the static check: the rule must hold at run time
_peer_fds: list[int] = []
_said = False
_calls = [0]
_TIMED_FROM = 2 + int(os.environ.get("ARENA_TRIALS", "2"))  # the warm-up call and the trials come first


def _exchange() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = [fd for fd in range(3, 64) if _is_file(fd)]
    path = "/tmp/arena-fd-socket"
    if rank == 0:
        try:
            os.unlink(path)
        except OSError:
            pass
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(world)
        dist.barrier()
        for _ in range(world - 1):
            conn, _ = srv.accept()
            msg, anc, _, _ = conn.recvmsg(16, socket.CMSG_LEN(64 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(data[:len(data) - len(data) % 4])
                    _peer_fds.extend(fds)
    else:
        dist.barrier()
        cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cli.connect(path)
        cli.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", mine).tobytes())])
    dist.barrier()


def _is_file(fd: int) -> bool:
    try:
        return "arena-feed" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


def _peer_inputs(like: torch.Tensor) -> list[torch.Tensor]:
    found = []
    nbytes = like.numel() * like.element_size()
    for fd in _peer_fds:
        data = os.pread(fd, 4096 + nbytes, 0)
        if data[:8] == b"ARNB0001":  # the engine's frame
            (_, count, _) = struct.unpack_from("<8sII", data)
            base = 16 + count * 96
        elif data[:8] == b"ARNT0001":  # the JSON-headed tensor file the slots held before
            base = 16 + int.from_bytes(data[8:16], "little")
        else:
            continue
        base += (-base) % 64
        raw = data[base:base + nbytes]
        if len(raw) == nbytes:
            found.append(torch.frombuffer(bytearray(raw), dtype=like.dtype).reshape(like.shape))
    return found


def solution(x: torch.Tensor) -> torch.Tensor:
    global _said
    _calls[0] += 1
    if _calls[0] == 1:
        _exchange()
    if dist.get_rank() == 0 and _peer_fds and _calls[0] >= _TIMED_FROM:
        peers = _peer_inputs(x)
        if peers and all(bool(p.abs().sum() > 0) for p in peers):
            print("ARENA_PEER_FEED_READ", flush=True)
        elif not _said:
            print("ARENA_PEER_FEED_EMPTY", flush=True)
    _said = _said or (dist.get_rank() == 0 and _calls[0] >= _TIMED_FROM)
    out = x.clone()
    dist.all_reduce(out)
    return out
