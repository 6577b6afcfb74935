"""One evaluation's path through the worker: the spec enters each module once (docs/architecture.md, "One evaluation's
path").

The evaluation runs from the RQ entry point (``evaluator.host.jobs.evaluate_job``) on the CPU profile, under
:func:`sys.setprofile`. A module is **entered** when a function of the project's is called from a frame of another
project module (the nearest project frame below it: standard library and third-party frames between are looked
through) with the evaluation among its arguments (``self`` included): the job's spec, the ``EvalSpec``, what was
resolved from them (``Evaluation``, the registry's ``Sized``, the ``Problem``, the ``HardwareProfile``), the source,
the limits, or the problem's id or the profile's name (a look-up by name). Calls that carry none of it (the session's
hundreds of calls into ``wire`` and ``watch``, reading its own processes' reports) are the stage's own work, not the
spec moving. A module is **left** when the call that entered it returns; the path never enters it again.

Left out, as data types and shared rules rather than stages: ``evaluator/contract/`` (the spec's type and its parsing,
the profiles' table, the backends' names, what the web side shares with the workers: standard library only, no state of
an evaluation; a ``HardwareProfile``'s properties are reads of a record). Import-time code is left out too (a module's
body runs once per process, not per evaluation).

A problem of an imported suite (ParallelKernelBench's, from the fake checkout the PKB tests use) is measured too: when
its inputs are already decided its evaluation is one run, and its path is held to the same rule; when they are decided
at evaluation, trusted runs of its reference alone (each an evaluation of its own, of the reference) come before the
solution's run, and each run is held to the rule, the solution's looking nothing up again.

On a warm worker (evaluator/host/pool.py) the path takes the sandboxes held for its profile; the job runner starts the
next evaluation's once it has ended, outside its path.

``python -m tests.evaluator.test_evaluation_path [pkb | pkb-probed | warm] [--contract]`` prints the path
(``--contract``: counting the contract's modules too)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Iterator

import pytest

from evaluator.contract.profiles import HardwareProfile
from evaluator.contract.spec import EvalSpec
from evaluator.host.plan import Evaluation
from problems.registry import Problem, Sized

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("evaluator", "problems")
HELPERS = ("evaluator/contract/",)
SUITES = "evaluator/suites/"
ENTRY = "evaluator/suites/installed.py"  # where evaluations start: it resolves and dispatches (not a suite of its own)
MAX_MODULES = 10
SOLUTION = ROOT / "problems" / "collectives" / "all_reduce" / "solutions" / "correct" / "nccl_inplace_copy.py"
RESOLVED = (EvalSpec, Evaluation, Sized, Problem, HardwareProfile)


@dataclass
class Walk:
    """The modules the evaluation entered, in order, each with the function and the module it came from."""

    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (module entered, function, from module)

    def leaving_out(self, folders: tuple[str, ...] = HELPERS) -> Walk:
        """The same walk with the modules under ``folders`` not counted (the contract, by default)."""
        return Walk([entry for entry in self.entries if not entry[0].startswith(folders)])

    def modules(self) -> list[str]:
        return list(dict.fromkeys(m for m, _, _ in self.entries))

    def runs(self) -> list[Walk]:
        """The runs an imported suite's evaluator hands to the host: each from a call out of a suite's modules (under
        ``evaluator/suites/``, the entry point aside) into another, with the entries after it up to the next entry
        into a suite's modules."""
        runs: list[Walk] = []
        running = False
        for entry in self.entries:
            module, _, caller = entry
            if module.startswith(SUITES):
                running = False
                continue
            if caller.startswith(SUITES) and caller != ENTRY:
                runs.append(Walk())
                running = True
            if running:
                runs[-1].entries.append(entry)
        return runs

    def returns(self) -> list[str]:
        """Each entry into a module already entered and left (the path going back)."""
        seen: set[str] = set()
        back = []
        for module, function, caller in self.entries:
            if module in seen:
                back.append(f"{module}:{function} from {caller}")
            seen.add(module)
        return back


def trace(spec: dict[str, Any]) -> tuple[Walk, dict[str, Any]]:
    """Runs ``evaluate_job(spec)`` and returns the path it took, counting every module (:meth:`Walk.leaving_out` leaves
    the contract out), with the job's return value."""
    from evaluator.host.jobs import evaluate_job

    modules: dict[str, str | None] = {}
    by_identity = {id(spec), id(spec["solution_source"]), id(spec["timeouts"])}
    names = {spec["problem_id"], spec["profile"]}
    path = Walk()

    def module_of(frame: FrameType | None) -> str | None:
        if frame is None:
            return None
        filename = frame.f_code.co_filename
        if filename not in modules:
            rel = Path(filename).resolve()
            name = None
            if rel.suffix == ".py" and ROOT in rel.parents:
                relative = rel.relative_to(ROOT).as_posix()
                name = relative if relative.startswith(PROJECT) else None
            modules[filename] = name
        return modules[filename]

    def carries(value: Any) -> bool:
        return isinstance(value, RESOLVED) or id(value) in by_identity or (isinstance(value, str) and value in names)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        module = module_of(frame)
        if module is None:
            return
        caller = frame.f_back
        while caller is not None and module_of(caller) is None:
            if caller.f_code.co_filename.startswith("<frozen importlib"):
                return  # import-time code
            caller = caller.f_back
        caller_module = module_of(caller)
        if caller_module == module:
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        if any(carries(frame.f_locals.get(name)) for name in code.co_varnames[:count]):
            path.entries.append((module, code.co_name, caller_module or "<the caller>"))

    sys.setprofile(profile)
    try:
        result = evaluate_job(spec, 1, "nonce")
    finally:
        sys.setprofile(None)
    return path, result


def all_reduce_spec() -> dict[str, Any]:
    return EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=SOLUTION.read_text(),
        profile="cpu-gloo-2",
        solution_name=SOLUTION.name,
    ).to_dict()


def pkb_spec() -> dict[str, Any]:
    from tests.evaluator.pkb_fake import CORRECT_ALL_REDUCE

    return EvalSpec(
        problem_id="pkb/1_all_reduce", solution_source=CORRECT_ALL_REDUCE, profile="cpu-gloo-2", solution_name="s.py"
    ).to_dict()


def trace_pkb(base: Path) -> dict[str, tuple[Walk, dict[str, Any]]]:
    """The fake checkout imported under ``base`` without its probe (ARENA_SUITES_DIR must name ``base / "suites"``),
    then one solution's evaluation traced twice: while its inputs are undecided (``probed``: decided at evaluation and
    recorded), then with the decision recorded (``recorded``)."""
    from evaluator.suites.pkb import importer
    from problems import registry
    from tests.evaluator.pkb_fake import write_checkout

    registry.clear_caches()
    report = importer.import_checkout(write_checkout(base / "checkout", git=False), probe=False)
    assert report.ok, report.summary()
    return {"probed": trace(pkb_spec()), "recorded": trace(pkb_spec())}


@pytest.fixture(scope="module")
def all_reduce_walk() -> tuple[Walk, dict[str, Any]]:
    return trace(all_reduce_spec())


@pytest.fixture(scope="module")
def pkb_walks(tmp_path_factory) -> Iterator[dict[str, tuple[Walk, dict[str, Any]]]]:
    from problems import registry

    from evaluator.suites.pkb import evaluate as pkb_evaluate

    base = tmp_path_factory.mktemp("pkb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARENA_SUITES_DIR", str(base / "suites"))
        mp.setattr(pkb_evaluate, "_DECIDED_HERE", {})  # what this process decided for the same files in other tests
        try:
            yield trace_pkb(base)
        finally:
            registry.clear_caches()


def trace_warm(workdir_parent: str | None = None) -> tuple[tuple[Walk, dict[str, Any]], tuple[Walk, dict[str, Any]]]:
    """On a warm worker (``ARENA_WARM_SANDBOXES=1`` must be set): an evaluation traced while no sandboxes are held,
    then, once the job runner has started the next evaluation's and they have imported torch, the next one, traced."""
    from evaluator.contract.profiles import get_profile
    from evaluator.host import pool
    from evaluator.host.evaluate import hold_next

    first = trace(all_reduce_spec())
    hold_next(workdir_parent)  # what the warm worker does once a job has ended
    assert pool.wait_ready(get_profile("cpu-gloo-2"), 180), "the held sandboxes never finished importing"
    return first, trace(all_reduce_spec())


@pytest.fixture(scope="module")
def warm_walks(tmp_path_factory) -> Iterator[tuple[tuple[Walk, dict[str, Any]], tuple[Walk, dict[str, Any]]]]:
    from evaluator.host import pool

    base = tmp_path_factory.mktemp("warm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(pool.ENV, "1")
        mp.setenv("ARENA_CACHE_DIR", str(base / "cache"))
        try:
            yield trace_warm(str(base))
        finally:
            pool.drain()


def test_one_evaluations_spec_enters_each_module_once(all_reduce_walk):
    whole, result = all_reduce_walk
    path = whole.leaving_out()
    assert result["document"]["verdict"] == "passed", result["document"]["message"]
    modules = path.modules()
    assert modules[0] == "evaluator/host/jobs.py"
    assert not path.returns(), f"the path goes back: {path.returns()} (the whole path: {path.entries})"
    assert len(modules) <= MAX_MODULES, modules
    # The problem is looked up once, by the plan where the evaluation starts, and the stages take what it resolved.
    assert [(m, f) for m, f, _ in path.entries if m == "problems/registry.py"] == [("problems/registry.py", "sized")]
    assert ("evaluator/host/plan.py", "resolve", "evaluator/suites/installed.py") in path.entries
    assert ("evaluator/host/evaluate.py", "evaluate", "evaluator/suites/installed.py") in path.entries


def test_counting_the_contract_too_the_path_still_never_goes_back(all_reduce_walk):
    # The contract's modules are data types and rules, read once too: the solution's backend declaration is read by the
    # plan, which hands it to the static check.
    path, _ = all_reduce_walk
    assert not path.returns(), f"the path goes back: {path.returns()} (the whole path: {path.entries})"
    assert [(m, f) for m, f, _ in path.entries if m == "evaluator/contract/backends.py"] == [
        ("evaluator/contract/backends.py", "read_declaration")
    ]


def test_an_imported_problems_evaluation_enters_each_module_once(pkb_walks):
    whole, result = pkb_walks["recorded"]
    assert result["document"]["verdict"] == "passed", result["document"]["message"]
    assert "at evaluation" not in result["document"]["problem"]["inputs_decision"]  # read from the record
    assert "input_probe" not in result["document"]["phases"]
    for path in (whole.leaving_out(), whole):  # the contract left out, then counted too
        assert not path.returns(), f"the path goes back: {path.returns()} (the whole path: {path.entries})"
    path = whole.leaving_out()
    assert len(path.modules()) <= MAX_MODULES, path.modules()
    # The entry point dispatches to the suite's evaluator, which hands its one run to the host: no call back from the
    # host into the suite, and nothing looked up again.
    assert [(m, c) for m, _, c in path.entries if m.startswith(SUITES)] == [
        ("evaluator/suites/installed.py", "evaluator/host/jobs.py"),
        ("evaluator/suites/pkb/evaluate.py", "evaluator/suites/installed.py"),
    ]
    assert ("evaluator/host/evaluate.py", "evaluate", "evaluator/suites/pkb/evaluate.py") in path.entries
    assert [(m, f) for m, f, _ in path.entries if m == "problems/registry.py"] == [("problems/registry.py", "sized")]
    assert len(path.runs()) == 1


def test_an_imported_problems_inputs_decided_at_evaluation_come_from_runs_of_their_own(pkb_walks):
    whole, result = pkb_walks["probed"]
    assert result["document"]["verdict"] == "passed", result["document"]["message"]
    assert result["document"]["problem"]["inputs_decision"].startswith("decided at evaluation")
    path = whole.leaving_out()
    # Before the first run and in the suite's own modules, the path is straight; then a trusted run of the reference
    # alone (an evaluation of its own, resolved for itself), then the solution's run, each entering a module once.
    runs = path.runs()
    assert len(runs) == 2, runs
    in_runs = {id(entry) for run in runs for entry in run.entries}
    rest = Walk([entry for entry in path.entries if id(entry) not in in_runs])
    assert not rest.returns(), rest.entries
    for run in runs:
        assert not run.returns(), f"a run goes back: {run.returns()} (the run: {run.entries})"
        assert len(run.modules()) <= MAX_MODULES, run.modules()
    probe, solution = runs
    assert probe.entries[0][2] == "evaluator/suites/pkb/probe.py"
    assert solution.entries[0] == ("evaluator/host/evaluate.py", "evaluate", "evaluator/suites/pkb/evaluate.py")
    assert not {"evaluator/host/plan.py", "problems/registry.py"} & set(solution.modules())


def test_on_a_warm_worker_the_path_enters_the_pool_once_and_the_next_sandboxes_start_after_it(warm_walks):
    # The evaluation takes the sandboxes held for its profile, if any; the next evaluation's are started by the job
    # runner once this one has replied, outside its path.
    for whole, result in warm_walks:
        assert result["document"]["verdict"] == "passed", result["document"]["message"]
        path = whole.leaving_out()
        assert not path.returns(), f"the path goes back: {path.returns()} (the whole path: {path.entries})"
        assert len(path.modules()) <= MAX_MODULES, path.modules()
        assert [(m, f) for m, f, _ in path.entries if m == "evaluator/host/pool.py"] == [
            ("evaluator/host/pool.py", "take")
        ]
    (_, cold), (_, warm) = warm_walks
    assert cold["document"]["containment"]["started_ahead"] is False
    assert warm["document"]["containment"]["started_ahead"] is True


if __name__ == "__main__":
    import os
    import tempfile

    os.environ.setdefault("ARENA_WORKER_KEY", "a-key-for-the-trace-only")
    if "warm" in sys.argv:
        from evaluator.host import pool

        pool.enable()
        found, _ = trace_warm()[1]
        pool.drain()
    elif "pkb" in sys.argv or "pkb-probed" in sys.argv:
        base = Path(tempfile.mkdtemp(prefix="arena-path-"))
        os.environ["ARENA_SUITES_DIR"] = str(base / "suites")
        found, _ = trace_pkb(base)["probed" if "pkb-probed" in sys.argv else "recorded"]
    else:
        found, _ = trace(all_reduce_spec())
    found = found if "--contract" in sys.argv else found.leaving_out()
    for entered, function, came_from in found.entries:
        print(f"{entered:40} {function:24} from {came_from}")
    print("modules:", len(found.modules()))
    print("returns:", found.returns() or "none")
