"""The cheat suite: every known way to game the evaluator, each with the verdict it must get, and honest solutions
that must pass — from real rank processes (KernelBench keeps its cheats beside its tests the same way).

CHEATS and HONEST are the one table; benchmarks/cheat_suite.py runs the same table on a GPU profile. Each cheat's
docstring says what it tries. ``where``: "any" (every profile), "gpu" (needs CUDA; skipped here), "cpu" (only
meaningful on the CPU profiles). ``says``: the verdict's message names the reason (any of these substrings).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaluator.contract.profiles import PROFILES
from evaluator.host.evaluate import evaluate
from evaluator.contract.spec import EvalSpec

HERE = Path(__file__).resolve().parent
CHEATS_DIR = HERE / "cheats"
HONEST_DIR = HERE / "honest"
REPO = HERE.parents[1]
PROBLEM = "collectives/all_reduce"
# The test-only profile of the "too fast" case: cpu-gloo-2 with a link so slow that its roofline is about a
# second, so any real run is "faster than physics". It exists only while that test runs.
RIGGED_PROFILE = "cpu-gloo-2-rigged-roofline"
HANG_TIMEOUTS = {"setup": 90.0, "correctness": 4.0, "timing": 30.0}


@dataclass(frozen=True)
class Case:
    file: str  # relative to tests/evaluator (or to the repository, for shared solutions)
    expected: str
    says: tuple[str, ...] = ()
    where: str = "any"
    timeouts: dict[str, float] | None = None
    profile: str | None = None  # CPU runs only: a test-only profile instead of the suite's
    decoy: bool = False  # make another evaluation's working directory beside this one first
    leaves_no: str = ""  # no process whose command line holds this may survive the evaluation

    @property
    def name(self) -> str:
        return Path(self.file).stem


CHEATS: list[Case] = [
    Case("cheats/constant_output.py", "wrong_output", ("differ",)),
    Case("cheats/return_input.py", "wrong_output", ("differ",)),
    Case("cheats/cache_by_data_ptr.py", "rejected", ("while being timed",)),
    Case("cheats/cache_by_call_count.py", "rejected", ("while being timed",)),
    Case("cheats/garbage_when_timed.py", "rejected", ("while being timed",)),
    Case("cheats/side_stream_unjoined.py", "rejected", ("while being timed",), where="gpu"),
    Case("cheats/patch_perf_counter.py", "rejected", ("time.perf_counter",)),
    Case("cheats/patch_elapsed_time.py", "rejected", ("elapsed_time",)),
    Case("cheats/patch_comparison.py", "rejected", ("torch.allclose", "__sub__", "__ne__")),
    Case("cheats/patch_compare_sys_modules.py", "rejected", ("evaluator.correctness",)),
    Case("cheats/tensor_subclass_eq.py", "rejected", ("subclass",)),
    Case("cheats/mutate_inputs.py", "rejected", ("must not write to its inputs",)),
    Case("cheats/forge_result_channel.py", "rejected", ("result channel", "outside the evaluation")),
    Case("cheats/early_exit_sys_exit.py", "rejected", ("sys.exit",)),
    Case("cheats/early_exit_os_exit.py", "rejected", ("before the harness finished",)),
    Case("cheats/hang_one_rank.py", "timeout", ("correctness phase passed its limit",), timeouts=HANG_TIMEOUTS),
    Case("cheats/crash_one_rank.py", "runtime_error", ("rank 1 died (signal SIGSEGV)",)),
    Case("cheats/write_outside_workdir.py", "rejected", ("/tmp/arena-cheat-outside.txt",)),
    Case("cheats/network_connection.py", "rejected", ("1.1.1.1",)),
    Case("cheats/read_other_submission.py", "rejected", ("another evaluation",), decoy=True),
    Case("cheats/slow_baseline.py", "rejected", ("torch.distributed.all_reduce",)),
    Case("cheats/gc_harness_state.py", "rejected", ("gc.get_objects",)),
    Case("cheats/dispatch_mode_compare.py", "rejected", ("mode active",)),
    Case("cheats/aten_override.py", "rejected", ("re-registered the PyTorch operator",)),
    Case("cheats/patch_harness_class.py", "rejected", ("evaluator.rank",)),
    Case("cheats/multicast_env.py", "rejected", ("NCCL_NVLS_ENABLE",)),
    Case("cheats/background_thread.py", "rejected", ("Python thread", "torch.distributed.all_reduce")),
    Case("cheats/escape_daemon.py", "rejected", ("outside its rank's process group",),
         leaves_no="arena_escape_marker"),
    Case("cheats/static_forbidden.py", "rejected", ("static check",)),
    Case("cheats/too_fast.py", "rejected", ("physically impossible",), where="cpu", profile=RIGGED_PROFILE),
]

HONEST: list[Case] = [
    Case("honest/reduce_scatter_all_gather.py", "passed"),
    Case("honest/ring_send_recv.py", "passed"),
    Case("honest/all_gather_sum.py", "passed"),
    Case("honest/persistent_workspace.py", "passed"),
    Case("honest/side_stream_joined.py", "passed"),
    Case("honest/chunked_async.py", "passed"),
    Case("honest/compiled_copy.py", "passed"),
    Case("honest/inductor_compiled.py", "passed"),
    Case("honest/triton_copy.py", "passed", where="gpu"),
    Case("../../benchmarks/solutions/symm_mem_one_shot_all_reduce.py", "passed", where="gpu"),
]


def spec_for(case: Case, profile: str, gpu: bool) -> EvalSpec:
    path = (HERE / case.file).resolve()
    # Timing is not the point of most cases: few iterations, two trials, generous limits except for the hang.
    timeouts = case.timeouts or {"setup": 240.0 if gpu else 90.0, "correctness": 60.0, "timing": 120.0}
    return EvalSpec(problem_id=PROBLEM, solution_source=path.read_text(), profile=profile, solution_name=path.name,
                    trials=2, timing_iterations=20 if gpu else 6, warmup_iterations=3 if gpu else 1,
                    timeouts=timeouts)


def make_decoy(parent: Path) -> Path:
    decoy = Path(tempfile.mkdtemp(prefix="arena-eval-", dir=parent))
    (decoy / "solution").mkdir()
    (decoy / "solution" / "solution.py").write_text("SECRET = 'another submission'\n")
    return decoy


def surviving(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "pytest" not in cmd:
                found.append(f"{pid}: {cmd[:120]}")
    return found


def run_case(case: Case, profile: str, gpu: bool, workdir_parent: Path) -> tuple[dict[str, Any], float]:
    """Evaluates one case; returns the result document and the wall time."""
    if case.decoy:
        make_decoy(workdir_parent)
    started = time.monotonic()
    doc = evaluate(spec_for(case, profile, gpu), workdir_parent=str(workdir_parent))
    return doc, time.monotonic() - started


def problems_with(case: Case, doc: dict[str, Any]) -> list[str]:
    """What is wrong with a case's result, in words (empty: as expected)."""
    out = []
    if doc["verdict"] != case.expected:
        out.append(f"expected {case.expected}, got {doc['verdict']}: {doc['message']}")
    elif case.says and not any(s in doc["message"] for s in case.says):
        out.append(f"the message does not name the reason ({' / '.join(case.says)}): {doc['message']}")
    if case.leaves_no and surviving(case.leaves_no):
        out.append(f"processes survived the evaluation: {surviving(case.leaves_no)}")
    return out


def _summary(doc: dict[str, Any]) -> str:
    logs = "\n".join(f"--- {k}\n{v[-1500:]}" for k, v in (doc.get("logs") or {}).items())
    return f"{doc['verdict']}: {doc['message']}\n{logs}"


@pytest.fixture
def rigged_profile(monkeypatch):
    base = PROFILES["cpu-gloo-2"]
    monkeypatch.setitem(PROFILES, RIGGED_PROFILE, dataclasses.replace(base, name=RIGGED_PROFILE, link_gbps=1e-5))


@pytest.mark.parametrize("case", CHEATS, ids=lambda c: c.name)
def test_cheat_gets_its_verdict(case: Case, tmp_path: Path, request) -> None:
    if case.where == "gpu":
        pytest.skip("needs CUDA: run benchmarks/cheat_suite.py on a GPU host")
    if case.profile:
        request.getfixturevalue("rigged_profile")
    doc, _ = run_case(case, case.profile or "cpu-gloo-2", False, tmp_path)
    assert not problems_with(case, doc), _summary(doc)
    assert not list(tmp_path.glob("arena-eval-*/config.json")), "the working directory was left behind"


@pytest.mark.parametrize("case", HONEST, ids=lambda c: c.name)
def test_honest_solution_passes(case: Case, tmp_path: Path) -> None:
    if case.where == "gpu":
        pytest.skip("needs CUDA: run benchmarks/cheat_suite.py on a GPU host")
    doc, _ = run_case(case, "cpu-gloo-2", False, tmp_path)
    assert doc["verdict"] == "passed", _summary(doc)
    assert doc["flags"]["uses_nccl"] and doc["static_checks"]["refusals"] == []
    assert doc["timing"]["rechecked_outputs"] == 2 * 6  # every timed output on both ranks was checked


def test_every_cheat_and_honest_file_is_in_the_table() -> None:
    listed = {(HERE / c.file).resolve() for c in CHEATS + HONEST}
    on_disk = set(CHEATS_DIR.glob("*.py")) | set(HONEST_DIR.glob("*.py"))
    assert on_disk <= listed, sorted(str(p.name) for p in on_disk - listed)
    assert len([c for c in CHEATS if c.where != "cpu"]) >= 15 and len(HONEST) >= 5
