"""Builds a solution's compiled extensions ahead of its GPU evaluation, on a CPU-only process of the GPU host.

Importing the solution with no GPU visible runs its module-level ``load_inline`` calls, which compile into the
solution's own build cache (one per solution source, so no solution reads or plants another's builds); the
evaluation that follows binds the same cache and its set-up skips the compiler. The import runs in the same
bubblewrap sandbox as an evaluation, under the sandbox's uid. Many builds can run in parallel on a host's CPU cores
(a worker pool on the ``<profile>-build`` queue) while the GPU works through the evaluation queue one job at a time.
Best effort: a solution that needs a GPU at import, or compiles lazily (Triton), builds during its evaluation.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.contract.build import needs_build
from evaluator.contract.result import trim
from evaluator.contract.spec import EvalSpec
from evaluator.host import job_cache, sandbox
from evaluator.host.evaluate import _cache_dir, _runtime_dir
from evaluator.host.folders import job_folder_prefix, workdir_root

# Hopper (H100/H200); the evaluation's ranks build for the same architecture, so the cache entry matches.
CUDA_ARCH = "9.0"
BUILD_TIMEOUT_S = 600.0

_IMPORT_ONLY = """
import importlib.util, os, sys
os.setgroups([]); os.setgid(int(os.environ['ARENA_SANDBOX_GID'])); os.setuid(int(os.environ['ARENA_SANDBOX_UID']))
os.makedirs(os.environ['HOME'], exist_ok=True)
spec = importlib.util.spec_from_file_location("arena_prebuild", "/solution/solution.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def prebuild(spec: EvalSpec, timeout_s: float = BUILD_TIMEOUT_S) -> dict[str, Any]:
    """Imports the solution with no GPU visible, in the sandbox, so its extensions compile into its cache."""
    if not needs_build(spec.solution_source):
        return {"built": False, "reason": "nothing to compile ahead (no load_inline)"}
    missing = sandbox.probe("cpu")
    if missing:
        return {"built": False, "reason": f"no sandbox to build in: {missing}"}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=job_folder_prefix("build"), dir=workdir_root()) as tmp:
        workdir = Path(tmp)
        for name in ("solution", "io"):
            (workdir / name).mkdir(mode=0o755)
        (workdir / "solution" / "solution.py").write_text(spec.solution_source)
        (workdir / "timer").write_bytes(b"")
        env = sandbox.environment({}, "cpu")
        env.update({"CUDA_VISIBLE_DEVICES": "", "TORCH_CUDA_ARCH_LIST": CUDA_ARCH})
        entry = _cache_dir(spec.solution_source)
        try:
            # The build writes into a file system of the job's own, copied back into the solution's entry as it ends
            # (evaluator/host/job_cache.py); an evaluation of the same solution waits for it under the entry's lock.
            uid, gid = sandbox.SANDBOX_UID, sandbox.SANDBOX_GID
            with job_cache.job_cache(entry, workdir / "cache", uid, gid, timeout_s) as cache:
                return _build(workdir, cache, env, timeout_s, started)
        except job_cache.JobCacheError as exc:
            return {"built": False, "reason": str(exc)}


def _build(workdir: Path, cache: Path, env: dict[str, str], timeout_s: float, started: float) -> dict[str, Any]:
    """The import itself, in the sandbox, with ``cache`` at /cache."""
    mounts = sandbox.Mounts(_runtime_dir(workdir), workdir / "timer", workdir / "solution", workdir / "io", cache)
    argv = sandbox.command(mounts, [sys.executable, "-c", _IMPORT_ONLY], env, "cpu", 4 << 30)
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            start_new_session=True,
            preexec_fn=sandbox.limits("cuda"),
        )
    except subprocess.TimeoutExpired:
        return {
            "built": False,
            "reason": f"build passed {timeout_s:.0f} s; the evaluation will try again",
            "seconds": round(time.monotonic() - started, 2),
        }
    return {
        "built": proc.returncode == 0,
        "seconds": round(time.monotonic() - started, 2),
        "log": trim(proc.stdout + proc.stderr, 4000),
        "reason": "" if proc.returncode == 0 else "import failed without a GPU; the evaluation will build it",
    }
