"""Sandboxes started ahead of their evaluation (evaluator/host/pool.py): a worker that serves one evaluation after
another takes the pair started after the last one (``hold_next``, as the warm worker calls it after each job), with
torch already imported, and no solution sees another's build cache or leaves anything behind."""

import os
import time
from pathlib import Path

import pytest

from evaluator.contract.spec import EvalSpec
from evaluator.host import pool, sandbox
from evaluator.host.evaluate import evaluate, hold_next

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or sandbox.probe("cpu") is not None, reason="needs root and bubblewrap"
)

# Leaves a file in its build cache and reports what it found there, so two solutions can be told apart.
CACHE_PROBE = """
import os
import torch
import torch.distributed as dist

TAG = "{tag}"
if os.environ["RANK"] == "0":  # one rank looks and builds, so the ranks do not race each other
    # A build product, where torch builds extensions: only those stay in the entry (evaluator/host/job_cache.py).
    os.makedirs("/cache/torch_extensions", exist_ok=True)
    print("ARENA_CACHE_SEEN", sorted(os.listdir("/cache/torch_extensions")), flush=True)
    os.makedirs(f"/cache/torch_extensions/built-by-{{TAG}}", exist_ok=True)
    open(f"/cache/torch_extensions/built-by-{{TAG}}/built.so", "w").write(TAG)


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


@pytest.fixture
def warm(monkeypatch, tmp_path):
    monkeypatch.setenv(pool.ENV, "1")
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path
    pool.drain()


def _job(tag: str, parent: Path, source: str | None = None) -> dict:
    """An evaluation as a warm worker's job: ``tag``'s cache probe, or ``source``."""
    return evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=source or CACHE_PROBE.format(tag=tag),
            solution_name=f"{tag}.py",
            profile="cpu-gloo-2",
            trials=1,
            timing_iterations=4,
            warmup_iterations=1,
        ),
        workdir_parent=str(parent),
    )


def _eval(tag: str, parent: Path) -> dict:
    """An evaluation as a warm worker's job, and what the worker does once the job has ended."""
    doc = _job(tag, parent)
    hold_next(str(parent))
    return doc


def _seen(doc: dict) -> str:
    return next(line for line in doc["logs"]["rank0"].splitlines() if line.startswith("ARENA_CACHE_SEEN"))


def test_the_next_evaluation_takes_the_waiting_sandboxes_and_skips_their_start(warm):
    from evaluator.contract.profiles import get_profile

    first = _eval("a", warm)
    assert pool.wait_ready(get_profile("cpu-gloo-2"), 120), "the held pair never finished importing"
    second = _eval("b", warm)
    assert first["verdict"] == second["verdict"] == "passed", (first["message"], second["message"])
    assert first["containment"]["started_ahead"] is False and second["containment"]["started_ahead"] is True
    # Taken once it had imported torch: the set-up is the ranks' own, the imports were done before it began.
    assert second["timeline"]["sandbox_imported"] == second["timeline"]["judge_imported"] == 0.0
    assert first["timeline"]["sandbox_imported"] > 0
    assert second["phases"]["setup"] < first["phases"]["setup"]


def test_a_solution_finds_its_own_builds_in_held_sandboxes_and_never_another_solutions(warm):
    assert _seen(_eval("a", warm)) == "ARENA_CACHE_SEEN []"
    assert _seen(_eval("b", warm)) == "ARENA_CACHE_SEEN []"  # a's build is not in b's cache
    again = _eval("a", warm)
    assert again["containment"]["started_ahead"] is True
    assert _seen(again) == "ARENA_CACHE_SEEN ['built-by-a']"  # lent to the held pair and back again


def test_the_next_pair_is_started_after_the_evaluation_by_the_job_runner_not_by_the_evaluation(warm):
    doc = _job("a", warm)
    assert doc["verdict"] == "passed", doc["message"]
    assert not pool._held  # the evaluation's document is whole before anything is started for the next one
    hold_next(str(warm))
    assert "cpu-gloo-2" in pool._held
    hold_next(str(warm))  # wanted once: a second call starts nothing more
    assert len(pool._held) == 1


def test_draining_leaves_no_process_and_no_folder(warm):
    _eval("a", warm)
    held = dict(pool._held)
    assert held, "an evaluation on a warm worker leaves the next pair waiting"
    boxes = [h.session.box.pid for h in held.values()]
    pool.drain()
    time.sleep(0.2)
    assert not [pid for pid in boxes if os.path.exists(f"/proc/{pid}")]
    assert not [h.workdir for h in held.values() if h.workdir.exists()]
    # Each pair's /cache was a file system of its own, mounted in its folder: none is left mounted.
    mounted = {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()}
    assert not [h.cache for h in held.values() if str(h.cache) in mounted]


def test_a_solution_that_builds_extensions_starts_its_own_sandboxes(warm):
    _eval("a", warm)
    held = pool._held["cpu-gloo-2"]
    # Its build may be running ahead on the build queue, in its own cache: that cache is bound, never moved.
    source = CACHE_PROBE.format(tag="c").replace("import os\n", "import os  # no load_inline here\n")
    doc = _job("c", warm, source)
    assert doc["verdict"] == "passed", doc["message"]
    assert doc["containment"]["started_ahead"] is False and pool._held["cpu-gloo-2"] is held
