"""The GPU-only starters (CUDA load_inline, Triton, symmetric memory) on a CUDA device: each builds, and its
`solution` returns what the reference returns, in a one-rank NCCL process group (a world of one GPU: the set-up, the
kernels and the symmetric-memory rendezvous all run; the data movement between GPUs is the reference's own, which
the evaluator's multi-GPU runs cover). Skipped without CUDA; also runs as a script:
`python tests/evaluator/test_starters_gpu.py` prints one line per starter."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

try:
    import pytest
except ImportError:  # run as a script on a GPU host without pytest
    pytest = None

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ("collectives/all_reduce", "tensor-parallel/all_gather_matmul", "collectives/all_gather")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_gpu_starters(problem_ids=PROBLEMS) -> list[str]:
    import torch
    import torch.distributed as dist

    from evaluator import starters
    from problems.registry import get

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ[name] = "0" if name == "NCCL_NVLS_ENABLE" else "1"
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        for problem_id in problem_ids:
            problem = get(problem_id)
            reference = problem.load_reference()
            preset = problem.presets["small"]
            params = {k: v for k, v in preset.params.items()}
            for backend in sorted(starters.GPU_ONLY):
                s = starters.starter(problem, backend)
                path = Path(folder) / s.filename
                path.write_text(s.source)
                module = _load(path, f"starter_{backend.replace('-', '_')}_{problem_id.replace('/', '_')}")
                for trial in range(2):  # the first call sets up, the second is what is timed
                    inputs = reference.make_inputs(0, 1, trial, device, preset.dtype, **params)
                    expected = reference.solution(*inputs)
                    got = module.solution(*inputs)
                    torch.cuda.synchronize()
                    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
                    got = got if isinstance(got, (tuple, list)) else (got,)
                    assert len(got) == len(expected), (s.filename, len(got))
                    for g, e in zip(got, expected):
                        assert g.shape == e.shape and g.dtype == e.dtype and g.device == e.device, s.filename
                        assert torch.equal(g, e), s.filename
                lines.append(f"{s.filename}: built, {len(got)} output(s) equal to the reference's on 2 calls")
    return lines


if pytest is not None:

    @pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
    def test_the_gpu_starters_build_and_return_what_the_reference_returns():
        assert len(check_gpu_starters()) == 3 * len(PROBLEMS)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for line in check_gpu_starters():
        print(line, flush=True)
