"""A proposal check, sandboxed like an evaluation: the contributor's reference and known answers run inside
bubblewrap (``evaluator.host.sandbox``: the same ``command()``, ``environment()`` and ``limits()``), as the sandbox's
uid, with the proposed folder bound read-only at /solution, the check's runtime (what runs the contributor's code,
nothing of the portal) read-only at /arena. What comes back through the exchange folder (/io/out) is the runs' outputs
as data; this process reads them, compares them and writes the report (``evaluator.checks.problem_check.judge``):
nothing the sandbox writes is taken as a report. Where the sandbox cannot start, the check fails closed with a report
that says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.host import job_cache, sandbox
from evaluator.host.folders import job_folder_prefix, workdir_root

REPO_ROOT = sandbox.PACKAGE_ROOT.parent
# What runs inside: the check and what it needs of the evaluator (never the host, the jobs' signing key or the portal).
CHECK_RUNTIME = (
    "__init__.py",
    "checks/__init__.py",
    "checks/check_sandbox.py",
    "checks/problem_check.py",
    "checks/selfcheck.py",
    "judge/__init__.py",
    "judge/compare.py",
    "wire.py",
    "contract/__init__.py",
    "contract/jobs.py",
    "contract/result.py",
)
# The registry and the references' shared helpers.
PROBLEMS_RUNTIME = ("__init__.py", "registry.py", "common.py", "seeds.py")
TIMEOUT_S = 210  # inside the RQ job's limit (portal.contributions.services.CHECK_JOB_TIMEOUT_S = 240)
TMP_BYTES = 1 << 30
# Each of the two folders the sandbox writes (the runs' outputs, the build cache).
WRITABLE_BYTES = 1 << 30
WRITABLE_FILES = 8192


def _stage(root: Path, category: str, name: str, files: dict[str, str], solutions: list[dict[str, str]]) -> tuple:
    from evaluator.checks.problem_check import write_folder

    runtime, solution, io, cache = root / "runtime", root / "solution", root / "io", root / "cache"
    for rel in CHECK_RUNTIME:
        dst = runtime / "evaluator" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sandbox.PACKAGE_ROOT / rel, dst)
    for rel in PROBLEMS_RUNTIME:
        dst = solution / "problems" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / "problems" / rel, dst)
    folder = write_folder(solution / "proposal", category, name, files, solutions)
    io.mkdir()
    timer = root / "no-timer"
    timer.write_bytes(b"")
    for path in [root, *root.rglob("*")]:  # the sandbox's uid reads what it is given
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    # The sandbox writes only inside out/ and its build cache, each a file system of its own, bounded in bytes and
    # files (on the host's disk they were bounded by the per-file limit alone: a reservation with fallocate, or
    # any number of files, went through), owned by the sandbox's uid. It cannot replace out/ (a link there would
    # lead the host's reads elsewhere): the exchange folder above it stays the host's.
    for d in (io / "out", cache):
        job_cache.make(d, sandbox.SANDBOX_UID, sandbox.SANDBOX_GID, WRITABLE_BYTES, WRITABLE_FILES)
    mounts = sandbox.Mounts(runtime, timer, solution, io, cache)
    return mounts, folder, "/solution/proposal/" + str(folder.relative_to(solution / "proposal"))


def check_sandboxed(
    category: str, name: str, files: dict[str, str], solutions: list[dict[str, str]] = (), timeout_s: float = TIMEOUT_S
) -> dict[str, Any]:
    """The check report of a proposal given as data; the contributor's code never runs outside the sandbox."""
    from evaluator.checks.problem_check import failed_report

    why = sandbox.probe("cpu")
    if why is not None:
        return failed_report(f"the check could not run: the sandbox is unavailable on this worker ({why})")
    started = time.monotonic()  # the report's time is the whole check's, the sandbox's run included
    with tempfile.TemporaryDirectory(prefix=job_folder_prefix("check"), dir=workdir_root()) as tmp:
        root = Path(tmp)
        try:
            return _checked(root, category, name, files, list(solutions), timeout_s, started)
        finally:
            for writable in (root / "io" / "out", root / "cache"):
                job_cache.remove(writable)


def _checked(
    root: Path,
    category: str,
    name: str,
    files: dict[str, str],
    solutions: list[dict[str, str]],
    timeout_s: float,
    started: float,
) -> dict[str, Any]:
    """The check in ``root``: staged, run in the sandbox, and its outputs judged before its file systems go."""
    from evaluator.checks.problem_check import failed_report, judge

    try:
        mounts, folder, inside = _stage(root, category, name, files, solutions)
    except job_cache.JobCacheError as exc:
        return failed_report(f"the check could not run: {exc}")
    env = sandbox.environment(dict(os.environ), "cpu")
    env["PYTHONPATH"] = "/arena:/solution"
    argv = sandbox.command(
        mounts, [sys.executable, "-m", "evaluator.checks.check_sandbox", inside], env, "cpu", TMP_BYTES
    )
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, preexec_fn=sandbox.limits("cpu")
        )
    except subprocess.TimeoutExpired:
        return failed_report(
            f"the check ran past its limit of {timeout_s:.0f} s and was stopped (a reference "
            f"that deadlocks or never returns ends here)"
        )
    tail = (done.stdout[-1500:] + done.stderr[-1500:]).decode("utf-8", "replace").strip()
    report = judge(
        folder,
        mounts.io / "out",
        note=f"the sandbox ended with exit {done.returncode}: {tail[-1500:]}",
        started=started,
    )
    report["sandboxed"] = True
    return report
