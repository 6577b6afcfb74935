"""Issue 13, class (f). Loads the problem's own reference.py by path — at the repository's path on the host, by
relative paths, and by searching every folder it can see for a problems/ tree or a reference.py beside a
problem.toml — and returns what the reference returns (a copy of the baseline: speedup 1, but "its own" answer
without any work of its own). Prints whether it found one; without one it returns zeros, which is wrong."""

import importlib.util
import os
import time

import torch

_found = []
for _path in ("ARENA_TEST_REPO/problems/collectives/all_reduce/reference.py",
              "problems/collectives/all_reduce/reference.py", "../problems/collectives/all_reduce/reference.py",
              "/arena/problems/collectives/all_reduce/reference.py"):
    if os.path.isfile(_path):
        _found.append(_path)
_deadline = time.monotonic() + 20
for _root, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if os.path.join(_root, d) not in ("/proc", "/sys", "/dev")]
    if "reference.py" in _files and "problem.toml" in _files:
        _found.append(os.path.join(_root, "reference.py"))
    if "registry.py" in _files and os.path.basename(_root) == "problems":
        _found.append(os.path.join(_root, "registry.py"))
    if time.monotonic() > _deadline:
        break
print("ARENA_REFERENCE_VISIBLE", len(_found), _found[:5], flush=True)
_reference = None
for _path in _found:
    if _path.endswith("all_reduce/reference.py"):
        try:
            spec = importlib.util.spec_from_file_location("stolen_reference", _path)
            _reference = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(_reference)
            break
        except Exception:
            _reference = None


def solution(x: torch.Tensor) -> torch.Tensor:
    if _reference is not None:
        return _reference.solution(x)
    return torch.zeros_like(x)
