"""Issue 13, class (e). Reads another evaluation's files with ``torch.from_file`` (a C++ reader an audit hook does
not see), at the exact host path of its solution, and prints what it read to its log (which comes back in the
result). Computes honestly."""

import glob

import torch
import torch.distributed as dist

_read = []
for _path in [bytes.fromhex("ARENA_TEST_DECOY_HEX").decode() + "/solution/solution.py"] + glob.glob("/tmp/arena-" + "eval-*/solution/*.py"):
    try:
        data = torch.from_file(_path, shared=False, size=64, dtype=torch.uint8)
        _read.append(bytes(data.tolist()).decode(errors="replace"))
    except Exception:
        pass
print("read:", _read, flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
