"""Issue 13, class (e). Writes outside its working directory with code an audit hook does not see: ``torch.save``
(PyTorch's C++ writer) to the host's /tmp and the repository, and ``os.open(..., dir_fd=...)`` relative to a
descriptor of "/" and of the exchange folder's parent. Computes honestly; nothing may reach the host."""

import os

import torch
import torch.distributed as dist

_NAME = "arena-cheat-outside-torch.pt"
for _path in ("/tmp/" + _NAME, "/var/tmp/" + _NAME, "ARENA_TEST_REPO/" + _NAME, "ARENA_TEST_PARENT/" + _NAME):
    try:
        torch.save(torch.ones(4), _path)
    except Exception:
        pass
for _dir, _rel in (("/", "var/tmp/arena-cheat-outside-dirfd.txt"), ("/", "tmp/arena-cheat-outside-dirfd.txt"),
                   ("/io", "../arena-cheat-outside-dirfd.txt"),
                   ("/", "ARENA_TEST_PARENT/arena-cheat-outside-dirfd.txt".lstrip("/"))):
    try:
        fd = os.open(_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            out = os.open(_rel, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(out, b"was here\n")
            os.close(out)
        finally:
            os.close(fd)
    except OSError:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
