"""evaluate(spec) -> result document: one evaluation, from the spec to exactly one verdict.

The judge's ranks make the inputs from secret seeds and run the reference for the expected outputs; meanwhile the
solution's ranks start inside the sandbox. The host then hands the solution each input as data, when its turn
comes: the warm-up call (its own set-up, not timed), the correctness trials (compared in full by the judge), and
the timed iterations (each iteration's inputs made only after the previous one ended and read by each rank from
its own feed slot, a descriptor no other rank holds, written only once its window opened; the baseline timed
in the judge on the same inputs just before or just after, by a draw; every timed output copied out of the
sandbox's view at once and checked by the judge at secret positions). Timings of both sides come from the same
compiled timer under the same protocol. On a warm worker the sandboxes were started ahead (evaluator/host/pool.py)."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from evaluator import roofline as rf
from evaluator import static_checks
from evaluator import stats
from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.contract import backends
from evaluator.contract.build import needs_build
from evaluator.contract.profiles import HardwareProfile
from evaluator.contract.result import LOG_LIMIT, TIMING_PROTOCOL_REVISION, Verdict, empty_document, trim
from evaluator.contract.spec import EvalSpec
from evaluator.host import batch, host_clock, pool, sandbox
from evaluator.host.folders import remove_tree
from evaluator.host.host_clock import Windows
from evaluator.host.plan import Evaluation, resolve, solution_backend
from evaluator.host.session import Session, Stop
from evaluator.timer.spin import spin_us
from problems.registry import Problem

logger = logging.getLogger("arena.evaluate")
SUSPICIOUS_SPEEDUP = 20.0
TMP_BYTES = {"cpu": 1 << 30, "cuda": 8 << 30}


SHM_MIN_FREE = 8 << 30


def workdir_root() -> str | None:
    """Where evaluations' folders are made: ARENA_WORKDIR_ROOT, else /dev/shm when it has room (every input and output
    of an evaluation passes through files there, and memory is much faster than disk), else the system default."""
    configured = os.environ.get("ARENA_WORKDIR_ROOT")
    if configured:
        return configured
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= SHM_MIN_FREE and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


def _secrets(spec: EvalSpec, warmup: int, iterations: int) -> dict[str, Any]:
    """Independent secrets for the warm-up, every trial, every timed iteration and the checked positions; the
    solution's ranks never see any of them. A spec that pins a seed (tests) gets a repeatable draw."""
    draw = random.Random(spec.seed).getrandbits if spec.seed is not None else secrets.randbits
    warm, trials = draw(62), [draw(62) for _ in range(spec.trials)]
    timing = [draw(62) for _ in range(warmup + iterations)]
    positions, order = draw(62), draw(62)
    # The iterations of a pass timed again (_retimed, _confirmed), drawn last so that a pinned seed draws the rest as
    # before.
    confirming = [draw(62) for _ in range(2 * iterations)]
    return {"warm": warm, "trials": trials, "timing": timing + confirming, "positions": positions, "order": order}


def _runtime_dir(workdir: Path) -> Path:
    """The runtime files the sandbox sees, staged in the evaluation's own folder (about 100 KB): they go with it. Staged
    once per worker process in /tmp instead, they stayed there for good, one folder per job on a forking worker."""
    runtime = sandbox.stage_runtime(workdir / "runtime")
    os.chmod(runtime, 0o755)
    return runtime


def _cache_root() -> Path:
    return Path(os.environ.get("ARENA_CACHE_DIR") or "/var/tmp/arena-cache")


def _cache_dir(source: str) -> Path:
    """This solution's build cache (by the hash of its source): a re-run finds its builds, no other solution can."""
    root = _cache_root()
    path = root / "solutions" / hashlib.sha256(source.encode()).hexdigest()[:24]
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        for p in (root, root / "solutions"):
            os.chmod(p, 0o711)
        os.chown(path, sandbox.SANDBOX_UID, sandbox.SANDBOX_GID)
        os.chmod(path, 0o700)
    return path


def evaluate(
    spec: EvalSpec | Evaluation,
    workdir_parent: str | None = None,
    keep_workdir: bool = False,
    *,
    imported_inner: bool = False,
) -> dict[str, Any]:
    """One evaluation's result document: ``spec`` as resolved where it started (evaluator/suites/installed.py), or
    resolved here (``imported_inner``: one of an imported suite's own runs, evaluated here rather than by its suite)."""
    started = time.monotonic()
    doc = empty_document()
    plan = spec if isinstance(spec, Evaluation) else resolve(spec, imported_inner=imported_inner)
    spec, problem, profile, params = plan.spec, plan.problem, plan.profile, plan.params
    doc["problem"] = {
        "id": problem.id,
        "version": problem.version,
        "content_hash": problem.content_hash,
        "suite": problem.suite,
        "preset": profile.preset,
        "world_size": profile.world_size,
        "params": params,
    }
    static = static_checks.check(
        spec.solution_source, multicast_allowed=profile.multicast_allowed, declaration=plan.declaration
    )
    doc["solution"] = {
        "name": spec.solution_name,
        "sha256": hashlib.sha256(spec.solution_source.encode()).hexdigest(),
        "backend": plan.backend,
    }
    doc["static_checks"] = static.as_dict()
    doc["flags"].update(_flags({}))  # nothing called yet; replaced by what the ranks called, if they run
    doc["profile"] = {
        "name": profile.name,
        "backend": profile.backend,
        "device": profile.device,
        "world_size": profile.world_size,
        "nodes": profile.nodes,
        "multicast_allowed": profile.multicast_allowed,
    }
    if profile.nodes > 1:
        # One host stands in for several: ranks are grouped into nodes and NCCL is told each group is a host of its
        # own (NCCL_HOSTID), so traffic between groups takes its network transport; the figures are not a cluster's.
        doc["profile"]["simulated_nodes"] = (
            f"{profile.nodes} nodes of {profile.ranks_per_node} ranks simulated on "
            f"one host; inter-node traffic over NCCL's network transport"
        )
    if plan.suite_source is not None:  # the host never calls a suite: the entry point dispatches (evaluator/suites)
        doc["verdict"] = Verdict.INFRA_ERROR.value
        doc["message"] = (
            f"{problem.id} is a problem of an imported suite: the evaluator its suite registers runs it "
            f"(evaluator.suites.installed.evaluate), not the host alone"
        )
        return doc
    refusal = _spec_refusal(spec, problem, profile)
    if refusal:
        verdict = Verdict.INFRA_ERROR if "version" in refusal or "content hash" in refusal else Verdict.REJECTED
        doc["verdict"], doc["message"] = verdict.value, refusal
        return doc
    if static.refused:
        doc["verdict"], doc["message"] = Verdict.REJECTED.value, static.message()
        doc["phases"]["total"] = round(time.monotonic() - started, 3)
        return doc
    backend_refusal = _backend_refusal(plan.backend, profile)
    if backend_refusal:
        doc["verdict"], doc["message"] = backend_refusal
        doc["phases"]["total"] = round(time.monotonic() - started, 3)
        return doc
    missing = sandbox.probe(profile.device)
    if missing is None:
        try:
            timer_path = compiled_timer.build()
        except compiled_timer.TimerBuildError as exc:
            missing = str(exc)
    if missing:
        doc["verdict"], doc["message"] = Verdict.INFRA_ERROR.value, f"the evaluation cannot run here: {missing}"
        return doc
    # A solution that builds extensions binds its own cache from the start: its build may be running ahead on the
    # host's build queue (evaluator/host/prebuild.py), and moving the cache under that build would break its lock.
    warm = pool.enabled() and not plan.imported
    held = pool.take(profile, usable=not needs_build(spec.solution_source)) if warm else None
    workdir = (
        held.workdir if held else Path(tempfile.mkdtemp(prefix="arena-eval-", dir=workdir_parent or workdir_root()))
    )
    ran, own_cache = False, None
    try:
        own_cache = _cache_dir(spec.solution_source)
        if held:
            pool.lend_cache(own_cache, held.cache)
        session = held.session if held else _new_session(workdir, profile, timer_path, own_cache)
        ran = True
        _run(doc, plan, session, started_ahead=held is not None)
    finally:
        if held:
            if not ran:
                held.session.close()  # _run closes its session; this one never got that far
            if own_cache is not None:
                pool.return_cache(held.cache, own_cache)
        if not keep_workdir:
            remove_tree(workdir)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    doc["containment"]["started_ahead"] = held is not None
    return doc


def hold_next(workdir_parent: str | None = None) -> None:
    """Starts the next evaluation's sandboxes ahead, for each profile a warm evaluation ran on since the last call
    (evaluator/host/pool.py). The job runner calls it once an evaluation has replied (``evaluator.worker``'s warm
    worker, after each job): not on the evaluation's path, nor between its end and its reply."""
    for profile in pool.wanted():
        try:
            _hold_next(profile, compiled_timer.build(), workdir_parent or workdir_root())
        except (OSError, sandbox.SandboxUnavailable, compiled_timer.TimerBuildError) as exc:
            logger.warning("could not start the next evaluation's sandboxes ahead: %s", exc)  # it starts its own


def _hold_next(profile: HardwareProfile, timer_path: Path, workdir_parent: str | None) -> None:
    """Starts the next evaluation's sandboxes for ``profile`` (evaluator/host/pool.py)."""

    def start(workdir: Path, cache: Path) -> Session:
        session = _new_session(workdir, profile, timer_path, cache)
        session.start_judges(None, None, (), hold=True)
        session.start_sandbox(None, hold=True)
        return session

    pool.hold(profile, start, workdir_parent, _cache_root())


def _new_session(workdir: Path, profile: HardwareProfile, timer_path: Path, cache: Path) -> Session:
    """The evaluation's folders in ``workdir`` and the session over them, its sandboxes not yet started."""
    solution_dir = _prepare_workdir(workdir, profile.world_size)
    return Session(workdir, profile, timer_path, _runtime_dir(workdir), solution_dir, cache, TMP_BYTES[profile.device])


_solution_backend = solution_backend  # the plan's reading of the backend (evaluator/host/plan.py), by its old name


def _backend_refusal(backend: str | None, profile: HardwareProfile) -> tuple[str, str] | None:
    """(verdict, message) when this worker cannot run a solution of ``backend`` on ``profile``."""
    if backend in backends.GPU_ONLY and profile.device != "cuda":
        return Verdict.REJECTED.value, (
            f"the {backend} backend runs on GPU profiles only; profile {profile.name} is {profile.device}"
        )
    if backend == "parallelkittens" and not sandbox.thunderkittens_path():
        return Verdict.INFRA_ERROR.value, (
            f"this worker has no ThunderKittens checkout ({backends.THUNDERKITTENS_ENV} "
            f"unset or not a folder with include/kittens.cuh); see "
            f"docs/backends/parallelkittens.md"
        )
    return None


def _spec_refusal(spec: EvalSpec, problem: Problem, profile: HardwareProfile) -> str | None:
    if profile.world_size not in problem.world_sizes and not profile.smoke:
        return (
            f"{problem.id} supports world sizes {list(problem.world_sizes)}; profile {profile.name} has "
            f"{profile.world_size}"
        )
    if spec.problem_version is not None and spec.problem_version != problem.version:
        return (
            f"this worker has {problem.id} version {problem.version}, the submission was made against version "
            f"{spec.problem_version}; update the worker's checkout"
        )
    if spec.problem_hash is not None and spec.problem_hash != problem.content_hash:
        return f"this worker's copy of {problem.id} differs from the portal's (content hash); update the worker"
    if spec.trials < 1:
        return "at least one correctness trial is needed"
    return None


def _write_solution(solution_dir: Path, spec: EvalSpec) -> str:
    filename = Path(spec.solution_name).name if spec.solution_name.endswith(".py") else "solution.py"
    (solution_dir / filename).write_text(spec.solution_source)
    return filename


def _prepare_workdir(workdir: Path, world_size: int) -> Path:
    """The evaluation's folders (the judge's, the solution's, the exchange folder); returns the solution's."""
    os.chmod(workdir, 0o711)
    (workdir / "judge").mkdir(mode=0o700)
    solution_dir = workdir / "solution"
    solution_dir.mkdir(mode=0o755)
    io = workdir / "io"
    io.mkdir(mode=0o755)
    for r in range(world_size):
        (io / f"r{r}").mkdir()
        if os.geteuid() == 0:
            os.chown(io / f"r{r}", sandbox.SANDBOX_UID, sandbox.SANDBOX_GID)
    return solution_dir


def _run(doc: dict[str, Any], plan: Evaluation, session: Session, *, started_ahead: bool) -> None:
    """The evaluation in ``session``, whose sandboxes were started ahead (and wait to be released) or not yet."""
    spec, problem, profile, params = plan.spec, plan.problem, plan.profile, plan.params
    iterations, warmup, limits = plan.iterations, plan.warmup, plan.limits
    world = profile.world_size
    filename = _write_solution(session.solution_dir, spec)
    seeds = _secrets(spec, warmup, iterations)
    judge_config = {
        "problem_id": problem.id,
        "preset": profile.preset,
        "params": params,
        "world_size": world,
        "backend": profile.backend,
        "device": profile.device,
        "seeds": seeds,
        "measure_timing": spec.measure_timing,
        "warmup_iterations": warmup,
        "private": str(session.private),
        "exchange": str(session.io),
        "timer": str(session.timer_path),
    }
    rank_config = {
        "world_size": world,
        "backend": profile.backend,
        "device": profile.device,
        "timer": "/arena/_arena_timer.so",
        "symm_mem_backend": backends.SYMM_MEM_BACKEND.get(plan.backend or ""),
    }
    trials: list[dict[str, Any]] = []
    calls: dict[str, int] = {}
    try:
        if started_ahead:
            session.release(judge_config, rank_config)
        else:
            session.start_judges(judge_config, plan.suites_root, plan.read_paths)
            session.start_sandbox(rank_config)
        session.tell_judges(op="prepare")
        judge_limit = sum(limits.values())
        session.wait(session.ranks, "booted", limits.get("setup", 120.0))
        session.mark("sandbox_booted")
        _boot_events(session)
        session.snapshot_threads()
        session.wait(session.judges, "prepared", judge_limit)
        session.mark("judge_prepared")
        session.load_solution(f"/solution/{filename}")
        session.wait(session.ranks, "loaded", limits.get("setup", 120.0))
        session.mark("solution_loaded")
        _note(calls, session, "loaded")
        session.check_threads("the solution was imported")
        _call(session, "warm", "setup", limits.get("setup", 120.0))
        _note(calls, session, "called")
        session.check_threads("its first call")
        session.begin("correctness")
        session.watching = True
        for t in range(spec.trials):
            copied = _call(session, f"t{t}", "correctness", limits.get("correctness", 120.0))
            _note(calls, session, "called")
            session.check_threads(f"trial {t}")
            session.tell_judges(op="check_trial", t=t, nbytes=copied)
            session.wait(session.judges, "trial", limits.get("correctness", 120.0), {"trial": t})
            reports = [p.last("trial") for p in session.judges]
            trials.append(
                {
                    "trial": t,
                    "ranks": [
                        {"rank": m["rank"], "ok": m["ok"], "error": m["error"], "max_abs_error": m.get("max_abs_error")}
                        for m in reports
                    ],
                }
            )
            gaming = [m for m in reports if m.get("gaming")]
            if gaming:
                raise Stop(
                    Verdict.REJECTED,
                    f"trial {t}, rank {gaming[0]['rank']}: {gaming[0]['error']}",
                    [m["rank"] for m in gaming],
                )
        doc["trials"] = trials
        bad = [(t["trial"], r) for t in trials for r in t["ranks"] if not r["ok"]]
        if bad:
            t, r = bad[0]
            raise Stop(Verdict.WRONG_OUTPUT, f"trial {t}, rank {r['rank']}: {r['error']}", [x["rank"] for _, x in bad])
        if spec.measure_timing:
            session.begin("timing")
            order = random.Random(seeds["order"])
            windows = _time(
                session,
                0,
                warmup,
                limits.get("timing", 180.0),
                order,
                iterations=iterations,
                at_least=plan.min_window_calls,
            )
            windows = _retimed(session, windows, warmup, limits, order)
            _note(calls, session, "timed")
            doc["timing"], message, by_clock = _timing(session, windows.first_recorded, windows)
            if by_clock:
                doc["timing"], message = _confirmed(session, doc["timing"], message, warmup, windows, limits, order)
            if message:
                raise Stop(Verdict.REJECTED, message)
            _finish_timing(doc, plan)
        else:
            doc["verdict"] = Verdict.PASSED.value
            doc["message"] = f"correct on {len(trials)} trials × {world} ranks; not timed"
    except Stop as stop:
        doc["verdict"], doc["message"], doc["failed_ranks"] = (
            stop.verdict,
            neutral_paths(session, stop.message),
            stop.ranks,
        )
        if stop.traceback:
            doc["traceback"] = neutral_paths(session, trim(stop.traceback, 4000))
        doc["trials"] = trials
    finally:
        session.close()
        reached = sandbox.limits_reached(session.box.pid) if session.box is not None else []
        if reached and doc.get("verdict") not in (None, Verdict.PASSED.value):
            # The limit is the cause the person needs to read first: the error it caused comes after it.
            doc["message"] = f"{'; '.join(reached)}: {doc.get('message', '')}"
            doc["limits_reached"] = reached
        doc["phases"] = session.phases()
        doc["timeline"] = dict(session.events)
        doc["logs"] = _logs(session)
        booted = next((p.first("booted") for p in session.ranks if p.first("booted")), None)
        if booted:
            doc["environment"] = booted.get("environment", {})
            if profile.device == "cuda":
                doc["environment"]["gpus"] = sorted(
                    {(p.first("booted") or {}).get("environment", {}).get("gpu") for p in session.ranks} - {None}
                )
        doc["containment"] = {
            "sandbox": "bubblewrap",
            "uid": sandbox.SANDBOX_UID,
            "network": "loopback only",
            "namespaces": ["net", "pid", "ipc", "uts", "mount", "cgroup"],
            "judge_separate": True,
            "judge_sandbox": {"uid": sandbox.JUDGE_UID},
            "leftover_processes": session.escaped,
        }
        doc["flags"].update(_flags(calls))
        if session.restored_signals:
            doc["flags"]["signal_handlers_restored"] = sorted(session.restored_signals)
    if session.escaped and doc["verdict"] not in (Verdict.INFRA_ERROR.value,):
        doc["verdict"], doc["failed_ranks"] = Verdict.REJECTED.value, []
        doc["message"] = (
            f"the solution left {len(session.escaped)} process(es) running in the sandbox after the "
            f"evaluation ended (killed): {session.escaped[0]}"
        )


def _call(session: Session, name: str, phase: str, limit_s: float) -> list[int | None]:
    """An untimed call (``warm``, or trial ``tN``): its inputs written to the ranks' feed slots, the call, and its
    outputs and inputs-after copied out of the sandbox's view at once; returns how many bytes of each rank's outputs
    were copied, for the judge."""
    session.tell_judges(op="show", name=name)
    session.wait(session.judges, "shown", limit_s, {"name": name})
    _check_feeds_zeroed(session, "shown", f"before the {name} call" if name != "warm" else "before the warm-up call")
    trial = name.startswith("t")
    session.command_ranks(compiled_timer.CALL, int(name[1:]) if trial else 0, compiled_timer.TRIAL_FLAG if trial else 0)
    session.wait(session.ranks, "called", limit_s, {"name": name})
    session.freeze_ranks()
    copied = _take_outputs(session, "called", {"name": name})
    _check_returned(session, "called", f"the {phase} call" if name == "warm" else f"trial {name[1:]}")
    return copied


def _check_returned(session: Session, kind: str, what: str) -> None:
    device = session.profile.device
    for p in session.ranks:
        m = p.last(kind) or {}
        if m.get("multicast_changed"):
            raise Stop(
                Verdict.REJECTED,
                f"rank {p.rank}: the solution changed {m['multicast_changed'][0]} in the process "
                f"environment ({what}); NVLink multicast stays off on shared hosts",
                [p.rank],
            )
        if m.get("inputs_swapped"):
            raise Stop(
                Verdict.REJECTED,
                f"rank {p.rank}, {what}: {m['inputs_swapped'][0]} no longer owns the storage it "
                f"was given (Tensor.set_, a .data swap or a resize): a solution reads its inputs "
                f"where they are, and must not re-point them",
                [p.rank],
            )
        # The engine put each disposition back as the call returned: the handler ran, if at all, inside the call.
        session.restored_signals.update(m.get("signals_changed") or ())
        if m.get("subclasses"):
            raise Stop(
                Verdict.REJECTED,
                f"rank {p.rank}, {what}: {m['subclasses'][0]}, a tensor subclass: outputs must be "
                f"plain torch.Tensor objects (a subclass can change how it is compared)",
                [p.rank],
            )
        if m.get("aliases"):
            raise Stop(
                Verdict.REJECTED,
                f"rank {p.rank}, {what}: {m['aliases'][0]}; outputs must be new tensors, never "
                f"an input or another output",
                [p.rank],
            )
        for k, dev in enumerate(m.get("devices") or []):
            if dev is not None and not str(dev).startswith(device):
                raise Stop(
                    Verdict.WRONG_OUTPUT,
                    f"rank {p.rank}, {what}: output {k} is on {dev}, expected the rank's {device} device",
                    [p.rank],
                )


def _confirmed(
    session: Session,
    first: dict[str, Any],
    message: str | None,
    warmup: int,
    first_pass: Windows,
    limits: Mapping[str, float],
    order: random.Random,
) -> tuple[dict[str, Any], str | None]:
    """A refusal by the host's clock alone is confirmed by a second pass of as many iterations on new inputs before it
    stands: a host whose own round trips a burst of other work stretched for part of an evaluation once refused an
    honest solution (one H200, 17 iterations), while a solution that hides work hides it in every pass. When the
    second pass's samples account for its windows, its figures are the result's and the first pass's check is kept
    beside them; when not, the refusal stands with both passes' figures."""
    begin = first_pass.end
    windows = _time(
        session,
        begin,
        warmup,
        limits.get("timing", 180.0),
        order,
        iterations=first_pass.end - first_pass.first_recorded,
        calls=first_pass.calls,
    )
    second, again, again_by_clock = _timing(session, begin, windows)
    if again is None:
        second["host_clock"]["first_pass"] = {"host_clock": first.get("host_clock"), "refusal": message}
        return second, None
    if second.get("host_clock"):
        first["host_clock"]["confirming_pass"] = second["host_clock"]
    return first, f"{again} (so did a second timing pass on new inputs)" if again_by_clock else again


def _time(
    session: Session,
    begin: int,
    warmup: int,
    limit_s: float,
    order: random.Random,
    *,
    iterations: int,
    at_least: int = 1,
    calls: int | None = None,
) -> Windows:
    """Timed windows from ``begin`` on (the first ``warmup`` of all are not recorded). Each window: the judges draw
    its inputs (and check the previous window's outputs), then the baseline (in the judges) and the solution (in the
    sandbox) are timed on them one after the other, in an order drawn per window, so neither always follows the same
    host work. Nothing else runs while either is timed. Returns how long each side's steps took by the host's clock,
    from the command that wrote its inputs where it reads them to its reply: no side can see a window's inputs before
    it opens.

    A window holds ``calls`` calls back to back, each on inputs of its own; the first pass (``calls`` None) chooses
    how many halfway through its warm-up, from the baseline's warm-up calls (evaluator/host/batch.py), and then runs
    as many timed windows as stand for ``iterations`` calls. A confirming pass repeats the first pass's choice for
    ``iterations`` windows."""
    deadline = time.monotonic() + limit_s
    windows = Windows(calls=calls or 1, first_recorded=max(begin, warmup))
    decide_at = None if calls is not None else min(warmup, max(1, warmup // 2)) if warmup else 0
    windows.end = begin + iterations if calls is not None else warmup + iterations
    unchecked: int | None = None
    copied: dict[int, list[int | None]] = {}
    digests: dict[int, list[int | None]] = {}
    i = begin
    while i < windows.end:
        left = max(0.1, deadline - time.monotonic())
        if i == decide_at:
            windows.wanted = _calls_per_window(session, i, at_least)
            windows.calls = batch.within_budget(windows.wanted, _solution_call_us(windows, begin, i))
            windows.batched_from = i
            windows.end = warmup + batch.timed_windows(iterations, windows.calls)
        if i == warmup and warmup and calls is None:
            windows.solution_spin_us = windows.baseline_spin_us = _one_spin(session, windows.batched_from, warmup)
            _set_spin(session, windows.solution_spin_us, left)
        t0 = time.monotonic()
        session.tell_judges(op="feed", i=i, calls=windows.calls)
        if unchecked is not None:
            session.tell_judges(
                op="check_timed", i=unchecked, nbytes=copied.pop(unchecked), digests=digests.pop(unchecked)
            )
            session.wait(session.judges, "timed", left, {"i": unchecked})
            unchecked = None
        session.wait(session.judges, "fed", left, {"i": i})
        _check_feeds_zeroed(session, "fed", f"before timed iteration {i - warmup}" if i >= warmup else "in the warm-up")
        windows.spent("feed_and_check", t0, time.monotonic())
        baseline_first = order.random() < 0.5
        if baseline_first:
            windows.baseline[i] = _time_baseline(session, windows, i, left)
        windows.solution[i], copied[i] = _time_solution(session, windows, i, i >= warmup, left)
        digests[i] = _claimed(session, "timed", {"i": i}, "digest")
        if not baseline_first:
            windows.baseline[i] = _time_baseline(session, windows, i, left)
        windows.spent("iteration", t0, time.monotonic())
        if i >= warmup:
            unchecked = i
        i += 1
    left = max(1.0, deadline - time.monotonic())
    if unchecked is not None:
        session.tell_judges(op="check_timed", i=unchecked, nbytes=copied.pop(unchecked), digests=digests.pop(unchecked))
        session.wait(session.judges, "timed", left, {"i": unchecked})
    session.tell_judges(op="baseline_done", since=max(begin, warmup))
    session.wait(session.judges, "baseline", left, {"since": max(begin, warmup)})
    windows.baseline_spin_us = max(float(p.last("baseline")["spin_us"]) for p in session.judges)
    windows.solution_spin_us = max(windows.solution_spin_us, windows.baseline_spin_us)  # one spin (_one_spin)
    session._pump(0.05)
    return windows


def _check_feeds_zeroed(session: Session, kind: str, when: str) -> None:
    """Refuses a rank whose feed slot the judge found still holding its last call's inputs (judge/rank.py
    ``_feed_kept``): each rank's engine zeroes its feed once the call's inputs are in their own storage."""
    kept = [p.rank for p in session.judges if (p.last(kind) or {}).get("feed_kept")]
    if kept:
        raise Stop(
            Verdict.REJECTED,
            f"rank {kept[0]}'s feed slot still held the inputs of its last call {when}: the evaluator's engine "
            f"zeroes each rank's feed once the call's inputs are in storage of their own, so a peer given the "
            f"descriptor finds nothing; a solution that remaps its view of the feed, or answers the host's commands "
            f"itself, leaves them there",
            kept,
        )


def _set_spin(session: Session, us: float, limit_s: float) -> None:
    """The spin in front of every timed window from now on, on both sides (_one_spin)."""
    session.command_ranks(compiled_timer.SPIN, arg=us)
    session.wait(session.ranks, "spun", limit_s)
    session.freeze_ranks()  # held again before the judges draw and the baseline is timed
    session.tell_judges(op="spin", us=us)
    session.wait(session.judges, "spun", limit_s)


def _solution_call_us(windows: Windows, begin: int, end: int) -> float:
    """The solution's median window per call by the host's clock over windows ``begin`` to ``end`` (0 for none)."""
    seen = [windows.solution[i] / windows.calls for i in range(begin, end) if i in windows.solution]
    return statistics.median(seen) if seen else 0.0


def _retimed(
    session: Session, windows: Windows, warmup: int, limits: Mapping[str, float], order: random.Random
) -> Windows:
    """A pass whose windows the solution's warm-up cut short (batch.within_budget) is timed again, on new inputs, at
    the size its timed calls allow, when that is at least twice as many calls: a solution slow in its warm-up only
    would otherwise choose small windows, and with them a loose bound on work hidden outside its samples."""
    again = batch.understated(windows.calls, windows.wanted, _solution_call_us(windows, warmup, windows.end))
    if again is None:
        return windows
    if session.profile.device == "cuda":
        # The spin must outlast the launch of a whole window (evaluator/timer/spin.py): it grows with the calls.
        _set_spin(session, windows.solution_spin_us * again / windows.calls, limits.get("timing", 180.0))
    second = _time(
        session,
        windows.end,
        warmup,
        limits.get("timing", 180.0),
        order,
        iterations=windows.end - windows.first_recorded,
        calls=again,
    )
    second.wanted = windows.wanted
    second.retimed_from = windows.calls
    return second


def _calls_per_window(session: Session, before: int, at_least: int) -> int:
    """How many calls each window holds from window ``before`` on (evaluator/host/batch.py), from the judges' own
    reports of the warm-up windows before it: the baseline's device time per call, and the bytes and values of one
    call's inputs and outputs. On CPU hosts the figures are the host's windows themselves, so work hidden in a window
    is inside the figure and no batch is needed for the bound (only ``at_least``); on GPU hosts too while
    batch.AUTOMATIC is off."""
    timed: dict[int, list[float]] = {}
    out_bytes, in_bytes, values = 0, 0, 0
    for p in session.judges:
        for m in p.messages:
            if not isinstance(m.get("i"), int) or m["i"] >= before or not isinstance(m.get("calls"), int):
                continue
            n = max(1, m["calls"])
            if m.get("kind") == "baselined" and isinstance(m.get("elapsed_us"), (int, float)):
                timed.setdefault(m["i"], []).append(float(m["elapsed_us"]) / n)
                out_bytes = max(out_bytes, int(m.get("nbytes") or 0) // n)
            elif m.get("kind") == "fed":
                values = max(values, int(m.get("values") or 0) // n)
                in_bytes = max(in_bytes, int(m.get("nbytes") or 0) // n)
    if not timed:
        return max(1, at_least)
    call_us = statistics.median(max(v) for v in timed.values())
    automatic = batch.AUTOMATIC and session.profile.device == "cuda"
    floor = host_clock.ALLOWANCE_FLOOR_US["cuda"] if automatic else 0.0
    return batch.calls_per_window(floor, call_us, in_bytes + out_bytes, values, at_least)


def _one_spin(session: Session, since: int, warmup: int) -> float:
    """The spin both sides put in front of every timed call from here on, sized from the baseline's warm-up launches
    alone (evaluator/timer/spin.py). Never from the solution's: the spin hides whatever the host does in the call
    while the GPU waits, so a spin sized from the solution's own launch times (which it makes as long as it likes, by
    working on the CPU inside its warm-up calls, or claims in samples it forges) would hide computation done on the
    host under it, off the events; and one length for both sides, because the host's cross-check subtracts the
    spin's nominal length from each side's window while the kernel runs for however long the GPU's clock makes it.
    A solution whose launch path is longer than the baseline's has the difference inside its events."""
    cuda = session.profile.device == "cuda"
    judged = [
        float(m["launch_us"])
        for p in session.judges
        for m in p.messages
        if m.get("kind") == "baselined"
        and isinstance(m.get("i"), int)
        and since <= m["i"] < warmup
        and isinstance(m.get("launch_us"), (int, float))
    ]
    return spin_us(judged, cuda)


def _time_solution(
    session: Session, windows: Windows, i: int, record: bool, limit_s: float
) -> tuple[float, list[int | None]]:
    """The solution's window of iteration ``i`` by the host's clock, and how many bytes of each rank's outputs the
    host copied out for the judge (None for a rank with nothing to copy). The window opens before the judge writes
    the inputs where the ranks can read them, so whatever a rank does with them before its call is inside it."""
    # The ranks stay stopped while the judge writes their inputs (nothing of theirs can touch the feed slots then: a
    # slot shrunk under the judge's mapping once killed it), and run again with the command that starts the call.
    started = time.monotonic()
    session.tell_judges(op="show", i=i)
    session.wait(session.judges, "shown", limit_s, {"i": i})
    windows.solution_staged[i] = (_replied(session.judges, "shown", i) - started) * 1e6
    session.command_ranks(compiled_timer.TIME, i, compiled_timer.RECORD_FLAG if record else 0, windows.calls)
    session.wait(session.ranks, "timed", limit_s, {"i": i})
    ended = _replied(session.ranks, "timed", i)
    after = time.monotonic()
    session.freeze_ranks()
    windows.spent("freeze", after, time.monotonic())
    after = time.monotonic()
    copied = _take_outputs(session, "timed", {"i": i}) if record else []
    windows.spent("copy_outputs", after, time.monotonic())
    _check_returned(session, "timed", f"timed iteration {i}")
    after = time.monotonic()
    session.check_threads(f"timed iteration {i}")
    windows.spent("check_threads", after, time.monotonic())
    return (ended - started) * 1e6, copied


def _time_baseline(session: Session, windows: Windows, i: int, limit_s: float) -> float:
    """The baseline's window of iteration ``i``, by the same steps as the solution's: the inputs written into a slot
    (the judge's own), then the engine's step on them."""
    started = time.monotonic()
    session.tell_judges(op="bshow", i=i)
    session.wait(session.judges, "bshown", limit_s, {"i": i})
    windows.baseline_staged[i] = (_replied(session.judges, "bshown", i) - started) * 1e6
    session.tell_judges(op="baseline", i=i, calls=windows.calls)
    session.wait(session.judges, "baselined", limit_s, {"i": i})
    return (_replied(session.judges, "baselined", i) - started) * 1e6


def _replied(peers: list, kind: str, i: int) -> float:
    """When the last of ``peers`` reported ``kind`` for iteration ``i``, by the host's clock."""
    return max(
        next(m["received"] for m in reversed(p.messages) if m.get("kind") == kind and m.get("i") == i) for p in peers
    )


def _claimed(session: Session, kind: str, match: dict[str, Any], field: str) -> list[Any]:
    """Each rank's ``field`` in its ``kind`` report with ``match``'s fields (None where it has none)."""
    return [
        next(
            (
                m.get(field)
                for m in reversed(p.messages)
                if m.get("kind") == kind and all(m.get(k) == v for k, v in match.items())
            ),
            None,
        )
        for p in session.ranks
    ]


def _take_outputs(session: Session, kind: str, match: dict[str, Any]) -> list[int | None]:
    """Copies each rank's outputs of one call (its ``kind`` report with ``match``'s fields) out of the sandbox's view
    the moment the last rank says it is done, so nothing written afterwards (through a mapping or a descriptor kept
    open, say) reaches the judge's check. As many bytes as the rank says it wrote, at most what its slot holds; a
    missing slot, a link or anything but a plain file is not copied (None): the judge then reports the outputs
    missing."""
    copied: list[int | None] = []
    for p, claimed in zip(session.ranks, _claimed(session, kind, match, "nbytes")):
        n = None
        if isinstance(claimed, int) and claimed > 0:
            try:
                n = copy_plain_file(
                    session.io / f"r{p.rank}" / wire.OUT_SLOT,
                    session.private / f"r{p.rank}" / wire.RETURNED_SLOT,
                    claimed,
                )
            except OSError:
                n = None
        copied.append(n)
    return copied


def copy_plain_file(src: Path, dst: Path, limit: int | None = None) -> int | None:
    """Copies the first ``limit`` bytes (all, when None) of ``src`` over the start of ``dst`` in the kernel (outputs
    can be hundreds of MiB per iteration on GPU profiles). ``dst`` is not truncated: its pages, kept from the last
    copy, are written over rather than allocated again. Returns the bytes copied; None when ``src`` is a link or
    not a plain file."""
    try:
        fd = wire.open_plain(src)
    except ValueError:
        return None
    try:
        info = os.fstat(fd)
        size = info.st_size if limit is None else min(limit, info.st_size)
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            done = 0
            while done < size:
                try:
                    n = os.copy_file_range(fd, out, size - done, done, done)
                except OSError:  # a kernel or file system without it: the same through sendfile
                    os.lseek(out, done, os.SEEK_SET)
                    n = os.sendfile(out, fd, done, size - done)
                if n == 0:
                    break
                done += n
            return done
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _boot_events(session: Session) -> None:
    """When the slowest rank had its process group and its warmed runtime, from the steps it reports (seconds from
    the evaluation's start on the host's clock): where the set-up's time goes."""
    booted = [p.first("booted") for p in session.ranks]
    for step in ("process_group_s", "runtime_warmed_s"):
        at = [
            m["received"] - session.started - m["boot_steps"]["ready_s"] + m["boot_steps"][step]
            for m in booted
            if isinstance((m or {}).get("boot_steps"), dict)
            and all(isinstance(m["boot_steps"].get(k), (int, float)) for k in (step, "ready_s"))
        ]
        if at:
            session.events[f"sandbox_{step.removesuffix('_s')}"] = round(max(at), 3)


def _timing(session: Session, warmup: int, windows: Windows) -> tuple[dict[str, Any], str | None, bool]:
    """The timing section of the result from the iterations recorded from ``warmup`` on, and the reason to reject,
    if any; True when that reason is the host's clock alone (_confirmed)."""
    timing, message = _timing_section(session, warmup, windows)
    by_clock = bool(message) and timing.get("host_clock", {}).get("refused_by_clock", False)
    timing.get("host_clock", {}).pop("refused_by_clock", None)
    return timing, message, by_clock


def _timing_section(session: Session, warmup: int, windows: Windows) -> tuple[dict[str, Any], str | None]:
    forged = next((p for p in session.ranks if p.samples and p.samples.error), None)
    if forged:
        return {}, f"rank {forged.rank}: {forged.samples.error}; a solution must not write to the evaluator's timer"
    wrong = [m for p in session.judges for m in p.messages if m.get("kind") == "timed" and not m.get("ok")]
    if wrong:
        m = wrong[0]
        return {}, (
            f"outputs produced while being timed were wrong although the correctness trials passed (rank "
            f"{m['rank']}, iteration {m['i'] - warmup}: {m['error']}): results that depend on being timed, "
            f"cached from earlier calls, or left running on another stream are not allowed"
        )
    baselines = [p.last("baseline") for p in session.judges]
    # Every figure from here on is per call: a window's sample, its host-clock window and its spin divided by the
    # calls it held (evaluator/host/batch.py).
    k = windows.calls
    base = [t / k for t in stats.slowest_rank([b["times_us"] for b in baselines])]
    sol = [t / k for t in stats.slowest_rank([[s[0] for s in p.samples.samples[warmup:]] for p in session.ranks])]
    if len(sol) != len(base):
        return {}, f"the timer reported {len(sol)} timed iterations, {len(base)} were run"
    per_call = windows.per_call()
    clock, forged_message = host_clock.cross_check(per_call, base, sol, warmup, session.profile.device, k)
    clock["refused_by_clock"] = forged_message is not None
    # The solution's ranks ran only inside their windows: stopped between them (Session.freeze_ranks), and the CPU
    # they used while stopped, which is none when every stop held.
    clock["ranks_stopped_between_windows"] = {
        "stops": session.freezes,
        "cpu_ms_while_stopped": round(session.frozen_ticks * 1e3 / os.sysconf("SC_CLK_TCK")),
    }
    by_host = session.profile.device == "cpu"
    early = [
        i
        for i in windows.solution
        if i >= warmup and i in windows.solution_staged and windows.solution[i] <= windows.solution_staged[i]
    ]
    if early:
        # A reply cannot end a window before its command: the host asks for it only once the inputs are written.
        return {}, (
            f"timed iteration {early[0] - warmup}: the ranks' reply came before their inputs were written; "
            f"a solution must not write to the evaluator's report channel"
        )
    if by_host:  # the figures a CPU host ranks by: the host's windows (host_clock.window_figures)
        clock["samples_median_us"] = {"baseline": statistics.median(base), "solution": statistics.median(sol)}
        base, sol = host_clock.window_figures(per_call, warmup)
        if not base:
            return {}, "the host's clock has no window for every timed iteration"
    sp = stats.speedup(base, sol)
    clock["steps_median_us"] = {
        "solution": _step_claims(session.ranks, ("timed",), warmup),
        "baseline": _step_claims(session.judges, ("baselined",), warmup),
        "judge_between": _step_claims(session.judges, ("fed", "timed"), warmup),
        "note": "each process's own account of its steps inside the window: a diagnosis, not a figure the check uses",
    }
    method = baselines[0]["method"]
    timing: dict[str, Any] = {
        "method": method,
        "protocol_revision": TIMING_PROTOCOL_REVISION,
        "figure": "device time per call, slowest rank per timed window (its calls back to back, divided by their "
        "number), median over windows"
        if not by_host
        else "host time per call by the host's own clock alone (each side's window from its command to its "
        "last rank's reply, less the judge's staging of its inputs; no in-process sample), median over "
        "iterations; coarse: CPU profiles test the whole pipeline, their speedups say nothing about GPU "
        "kernels",
        "spin_us": baselines[0].get("spin_us", 0.0),
        "iterations": len(base),
        "calls_per_window": k,
        "baseline": stats.summarize(base),
        "solution": stats.summarize(sol),
        "speedup": sp["speedup"],
        "speedup_ci": [sp["ci_low"], sp["ci_high"]],
        "speedup_uncertainty": sp["uncertainty"],
        "speedup_estimator": "median of per-iteration ratios; iteration i of the baseline (timed in the judge's "
        "processes) and of the solution (timed in the sandbox) ran on the same inputs",
        "ratio_of_medians": sp["ratio_of_medians"],
        "launch_cpu_us": {
            "baseline": stats.summarize(stats.slowest_rank([b["launch_us"] for b in baselines]))["median_us"] / k,
            "solution": stats.summarize(
                stats.slowest_rank([[s[1] for s in p.samples.samples[warmup:]] for p in session.ranks])
            )["median_us"]
            / k,
        },
        "rechecked_outputs": sum(1 for p in session.judges for m in p.messages if m.get("kind") == "timed"),
        "timer": "compiled (evaluator/timer/_engine.cpp): every call's path from its inputs to its outputs, samples "
        "keyed by the engine, read by the host",
        "graph": {"available": False, "reason": "CUDA-graph figures are not taken under the separated judge"},
        "host_clock": clock,
    }
    return timing, forged_message


def _step_claims(peers: list, kinds: tuple[str, ...], warmup: int) -> dict[str, float]:
    """Median over the timed iterations of each step a side says it took (slowest rank per iteration)."""
    per_step: dict[str, dict[int, float]] = {}
    for p in peers:
        for m in p.messages:
            steps = m.get("steps_us")
            if m.get("kind") in kinds and isinstance(steps, dict) and isinstance(m.get("i"), int) and m["i"] >= warmup:
                for name, us in steps.items():
                    if isinstance(us, (int, float)):
                        slot = per_step.setdefault(str(name)[:20], {})
                        slot[m["i"]] = max(slot.get(m["i"], 0.0), float(us))
    return {name: round(statistics.median(v.values()), 1) for name, v in list(per_step.items())[:8]}


def _finish_timing(doc: dict[str, Any], plan: Evaluation) -> None:
    profile = plan.profile
    if plan.roofline_failure is not None:
        raise plan.roofline_failure
    assert plan.roofline_terms is not None and plan.dtype is not None
    roof = rf.roofline_of(plan.roofline_terms, plan.dtype, profile, profile.world_size)
    base_us, sol_us = doc["timing"]["baseline"]["median_us"], doc["timing"]["solution"]["median_us"]
    roof["baseline_fraction"] = rf.fraction(roof["time_us"], base_us)
    roof["solution_fraction"] = rf.fraction(roof["time_us"], sol_us)
    doc["roofline"] = roof
    doc["flags"]["suspicious_speedup"] = doc["timing"]["speedup"] > SUSPICIOUS_SPEEDUP
    if rf.impossible(roof["time_us"], sol_us):
        raise Stop(
            Verdict.REJECTED,
            f"measured {sol_us:.2f} µs, below the {roof['time_us']:.2f} µs that the {profile.name} "
            f"hardware allows for this problem ({roof['bound']}-bound): physically impossible, so "
            f"the work was not all done or not all timed",
        )
    doc["verdict"] = Verdict.PASSED.value
    if profile.device == "cpu":
        # A CPU profile tests the whole pipeline; its coarse host-clock ratio is in the document, never a headline.
        doc["message"] = (
            f"correct on {len(doc['trials'])} trials × {profile.world_size} ranks; timed on a CPU "
            f"profile, which tests the pipeline: no speedup is computed for ranking"
        )
        return
    doc["message"] = (
        f"correct on {len(doc['trials'])} trials × {profile.world_size} ranks; "
        f"{doc['timing']['speedup']:.3f}× the baseline (± {doc['timing']['speedup_uncertainty']:.3f})"
    )


def _note(calls: dict[str, int], session: Session, kind: str) -> None:
    for p in session.ranks:
        for m in p.messages:
            if m.get("kind") == kind and not m.get("_counted"):
                m["_counted"] = True
                for name, n in (m.get("calls") or {}).items():
                    calls[name] = calls.get(name, 0) + int(n)


# Dispatcher operators of point-to-point communication and of synchronisation only; every other operator the engine
# counts (c10d::, _c10d_functional::, symm_mem::) moves data between ranks collectively.
_POINT_TO_POINT_OPS = frozenset({"send", "recv", "recv_any_source", "batch_isend_irecv"})
_NOT_COMMUNICATION_OPS = frozenset(
    {"barrier", "monitored_barrier", "wait_tensor", "wait", "rendezvous", "empty", "set_backend"}
)


def _flags(calls: dict[str, int]) -> dict[str, Any]:
    """The result's communication flags, from the dispatcher operators each rank's engine counted while the
    solution's calls ran (namespaced names, e.g. ``c10d::allreduce_``)."""
    base = {n: n.split("::")[-1].strip("_") for n in calls}
    p2p = sorted({b for b in base.values() if b in _POINT_TO_POINT_OPS})
    collectives = sorted({b for b in base.values() if b not in _POINT_TO_POINT_OPS and b not in _NOT_COMMUNICATION_OPS})
    return {
        "uses_nccl": bool(collectives or p2p),
        "nccl_calls": collectives,
        "point_to_point_calls": p2p,
        "uses_collectives_api": bool(collectives),
        "communication_calls": calls,
        "communication_source": "counted at run time inside the sandbox, from the dispatcher's operators "
        "(c10d, functional collectives, symmetric memory)",
    }


def _logs(session: Session) -> dict[str, str]:
    out = {}
    for r in range(session.world_size):
        try:
            # Written by the rank, and its folder is the sandbox's: opened as a plain file or not at all.
            out[f"rank{r}"] = neutral_paths(
                session, trim(wire.read_plain_text(session.io / f"r{r}" / "log.txt", LOG_LIMIT, LOG_LIMIT))
            )
        except (OSError, ValueError):
            out[f"rank{r}"] = ""
    try:
        sandbox_log = (session.workdir / "sandbox.log").read_text(errors="replace").strip()
        if sandbox_log:
            out["sandbox"] = neutral_paths(session, trim(sandbox_log, 2000))
    except OSError:
        pass
    return out


def neutral_paths(session: Session, text: str) -> str:
    """``text`` with the host's own folders of this evaluation named as the sandbox names them: a rank can print its
    mount table (/proc/self/mountinfo), whose sources are host paths (the evaluation's folder, the build cache), and
    no host path belongs in a result."""
    pairs = [
        (session.cache, "/cache"),
        (session.io, "/io"),
        (session.solution_dir, "/solution"),
        (session.runtime, "/arena"),
        (session.workdir, "<evaluation>"),
        (session.workdir.parent, "<evaluations>"),
        (session.cache.parent, "<caches>"),
    ]
    # Every bind of a sandbox whose host source differs from where the sandbox sees it (its first process's command
    # line, readable inside, holds them), and the host's PATH it was given.
    for proc in ([session.box] if session.box else []) + list(session.judge_procs):
        args = [str(a) for a in proc.args] if isinstance(proc.args, (list, tuple)) else []
        for k, a in enumerate(args[:-2]):
            if a in ("--bind", "--ro-bind", "--ro-bind-try", "--dev-bind", "--bind-try") and args[k + 1] != args[k + 2]:
                pairs.append((Path(args[k + 1]), args[k + 2]))
            elif a == "--setenv" and args[k + 1] == "PATH" and len(args[k + 2]) > 1:
                text = text.replace(args[k + 2], "<PATH>")
    for host, shown in sorted(pairs, key=lambda p: -len(str(p[0]))):
        text = text.replace(str(host), shown)
        # mountinfo gives a bind mount's source relative to its file system's root (/dev/shm/x shows as /x).
        parts = Path(host).parts
        if len(parts) > 3:
            text = text.replace(str(Path(*parts[:1], *parts[3:])), shown)
    return text
