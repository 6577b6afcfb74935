"""Builds a solution's compiled extensions ahead of its GPU evaluation, on a CPU-only process of the GPU host.

Importing the solution with no GPU visible runs its module-level ``load_inline`` calls, which compile into the
solution's build cache (evaluator.sandbox: one per solution source, so no solution reads or plants another's
builds); the evaluation that follows finds the build there and its set-up phase skips the compiler. The import
runs contained like a rank: as the sandbox user with its limits, under the same audit hook. Many builds can run
in parallel on a host's CPU cores (a worker pool on the ``<profile>-build`` queue) while the GPU works through the
evaluation queue one job at a time. Best effort: a solution that needs a GPU at import, or compiles lazily
(Triton), simply builds during its evaluation instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator import sandbox
from evaluator.launcher import rank_environment
from evaluator.contract.profiles import MULTICAST_OFF
from evaluator.contract.result import trim
from evaluator.contract.build import needs_build
from evaluator.contract.spec import EvalSpec

# Hopper (H100/H200); the evaluation's ranks build for the same architecture, so the cache entry matches.
CUDA_ARCH = "9.0"
BUILD_TIMEOUT_S = 600.0

_IMPORT_ONLY = """
import importlib.util, json, sys
from evaluator import guard
guard.install(guard.Policy.from_config(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])))
spec = importlib.util.spec_from_file_location("arena_prebuild", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def prebuild(spec: EvalSpec, timeout_s: float = BUILD_TIMEOUT_S) -> dict[str, Any]:
    """Imports the solution with no GPU visible so its extensions compile into the shared cache."""
    if not needs_build(spec.solution_source):
        return {"built": False, "reason": "nothing to compile ahead (no load_inline)"}
    started = time.monotonic()
    containment = sandbox.plan("cuda", {"build": timeout_s}, spec.solution_source)
    with tempfile.TemporaryDirectory(prefix="arena-build-", dir=sandbox.workdir_root()) as tmp:
        workdir = Path(tmp)
        (workdir / "solution").mkdir()
        path = workdir / "solution" / "solution.py"
        path.write_text(spec.solution_source)
        policy = containment.prepare(workdir)
        env = rank_environment(0, 1, 0, {"CUDA_VISIBLE_DEVICES": "", "TORCH_CUDA_ARCH_LIST": CUDA_ARCH}, workdir,
                               containment)
        argv = [sys.executable, "-c", _IMPORT_ONLY, str(path), str(workdir), json.dumps(policy),
                json.dumps(sorted(MULTICAST_OFF))]
        try:
            proc = subprocess.run(argv, cwd=workdir / "solution", env=env, capture_output=True, text=True,
                                  timeout=timeout_s, start_new_session=True, **containment.popen_kwargs())
        except subprocess.TimeoutExpired:
            return {"built": False, "reason": f"build passed {timeout_s:.0f} s; the evaluation will try again",
                    "seconds": round(time.monotonic() - started, 2)}
    return {"built": proc.returncode == 0, "seconds": round(time.monotonic() - started, 2),
            "log": trim(proc.stdout + proc.stderr, 4000),
            "reason": "" if proc.returncode == 0 else "import failed without a GPU; the evaluation will build it"}
