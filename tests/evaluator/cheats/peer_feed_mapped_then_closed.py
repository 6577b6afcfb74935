"""Class: a peer's feed kept as a mapping, with no descriptor left to see. Rank 1 passes rank 0 its feed slot's
descriptor over a Unix socket (SCM_RIGHTS) in the first call; rank 0 maps it shared and read-only and closes the
descriptor at once, so the host's look through its descriptors finds nothing, and reads the peer's slot through the
mapping at every timed call (it says ARENA_PEER_MAPPING_READ when it finds values there). The host reads each rank's
mappings at every stop and refuses a mapping of another rank's feed as it refuses a descriptor of one."""

import array
import importlib
import os

import torch
import torch.distributed as dist

socket = importlib.import_module("so" + "cket")  # past the static check: the rule must hold at run time
_ct = importlib.import_module("c" + "types")
_views: list[tuple[int, int]] = []  # (address, length) of each peer's feed as mapped here
_libc = _ct.CDLL(None, use_errno=True)
_libc.mmap.restype = _ct.c_void_p
_libc.mmap.argtypes = [_ct.c_void_p, _ct.c_size_t, _ct.c_int, _ct.c_int, _ct.c_int, _ct.c_long]
_calls = [0]


def _feed_fd() -> int | None:
    for fd in range(3, 64):
        try:
            if "arena-feed" in os.readlink(f"/proc/self/fd/{fd}"):
                return fd
        except OSError:
            continue
    return None


def _take_peer_feed() -> None:
    path = "/tmp/arena-feed-socket"
    if dist.get_rank() == 0:
        if os.path.exists(path):
            os.unlink(path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        dist.barrier()
        conn, _ = server.accept()
        _, ancillary, _, _ = conn.recvmsg(16, socket.CMSG_LEN(4))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fd = array.array("i", data[:4])[0]
                # Through libc: Python's mmap keeps a duplicate of the descriptor, which the host would see.
                length = os.fstat(fd).st_size
                address = _libc.mmap(None, length, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
                os.close(fd)
                if address not in (None, _ct.c_void_p(-1).value):
                    _views.append((address, length))
    else:
        dist.barrier()
        fd = _feed_fd()
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        client.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd or 0]).tobytes())])
    dist.barrier()


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if _calls[0] == 1:
        _take_peer_feed()
    for address, length in _views:
        if any(_ct.string_at(address, min(length, 1 << 16))):
            print("ARENA_PEER_MAPPING_READ", flush=True)
    out = x.clone()
    dist.all_reduce(out)
    return out
