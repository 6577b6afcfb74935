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
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.analysis import roofline as rf
from evaluator.analysis import static_checks
from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.contract import backends
from evaluator.contract.build import needs_build
from evaluator.contract.profiles import HardwareProfile
from evaluator.contract.result import LOG_LIMIT, Verdict, empty_document, trim
from evaluator.contract.spec import DEFAULT_TIMEOUTS, EvalSpec
from evaluator.host import job_cache, pool, sandbox, solution_call, timing_pass
from evaluator.host.folders import job_folder_prefix, remove_tree, workdir_root
from evaluator.host.plan import Evaluation, resolve, solution_backend
from evaluator.host.session import Session, Stop
from problems.registry import Problem

logger = logging.getLogger("arena.evaluate")
SUSPICIOUS_SPEEDUP = 20.0
TMP_BYTES = {"cpu": 1 << 30, "cuda": 8 << 30}


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
    return compiled_timer.cache_dir()


def _cache_dir(source: str) -> Path:
    """This solution's build cache (by the hash of its source): a re-run finds its builds, no other solution can. The
    host's alone: no sandbox binds it (each job's /cache is a copy, evaluator/host/job_cache.py), so no process of the
    sandbox's uid on the host can write into it either."""
    root = _cache_root()
    path = root / "solutions" / hashlib.sha256(source.encode()).hexdigest()[:24]
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        for p in (root, root / "solutions"):
            os.chmod(p, 0o711)
        os.chown(path, 0, 0)
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
    parent = workdir_parent or workdir_root()
    workdir = held.workdir if held else Path(tempfile.mkdtemp(prefix=job_folder_prefix("eval"), dir=parent))
    ran = False
    try:
        own_cache = _cache_dir(spec.solution_source)
        # The sandbox's /cache is a file system of the job's own, filled from the solution's entry and emptied back
        # into it (evaluator/host/job_cache.py); a held pair's was made with it.
        cache = held.cache if held else workdir / "cache"
        # A build of the same solution running ahead on the build queue is waited for, as long as a set-up may take.
        wait_s = plan.limits.get("setup", DEFAULT_TIMEOUTS["setup"])
        uid, gid = sandbox.SANDBOX_UID, sandbox.SANDBOX_GID
        with job_cache.job_cache(own_cache, cache, uid, gid, wait_s, made=held is not None):
            try:
                session = held.session if held else _new_session(workdir, profile, timer_path, cache)
                ran = True
                _run(doc, plan, session, started_ahead=held is not None)
            finally:
                if held and not ran:
                    held.session.close()  # _run closes its session; this one never got that far
    except job_cache.JobCacheError as exc:
        doc["verdict"], doc["message"] = Verdict.INFRA_ERROR.value, f"the evaluation cannot run here: {exc}"
    finally:
        if not keep_workdir:
            remove_tree(workdir)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    doc["containment"]["started_ahead"] = held is not None
    return doc


def hold_next(workdir_parent: str | None = None) -> None:
    """Starts the next evaluation's sandboxes ahead, for each profile a warm evaluation ran on since the last call
    (evaluator/host/pool.py). The job runner calls it once an evaluation has replied (``evaluator.host.worker``'s warm
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

    pool.hold(profile, start, workdir_parent)


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
    """The solution's file, under the name it was uploaded with where the file system takes it (a name is capped at
    255 bytes, and a portal's cap of 255 characters lets longer ones through), else ``solution.py``."""
    filename = Path(spec.solution_name).name if spec.solution_name.endswith(".py") else "solution.py"
    if len(filename.encode()) > 128 or filename.startswith("."):
        filename = "solution.py"
    (solution_dir / filename).write_text(spec.solution_source)
    return filename


def _prepare_workdir(workdir: Path, world_size: int) -> Path:
    """The evaluation's folders (the judge's, the solution's, the exchange folder); returns the solution's."""
    os.chmod(workdir, 0o711)
    (workdir / "judge").mkdir(mode=0o700)
    solution_dir = workdir / "solution"
    solution_dir.mkdir(mode=0o755)
    # The exchange folder and its rank folders are the host's: nothing in the sandbox creates, renames or removes a
    # name under /io. A red team, whose rank folder was its own, made empty files there until every inode of the
    # host's /dev/shm was taken (the memory cap does not count inodes), and no service of the host's could create a
    # file there while its evaluation passed. The host makes the two files a rank writes, its output slot
    # (evaluator/rank/worker.py) and its log (evaluator/rank/spawn.py), and gives them to the sandbox's uid.
    io = workdir / "io"
    io.mkdir()
    os.chmod(io, 0o755)  # not mkdir's mode, which a umask narrows: the sandbox's uid must pass through
    for r in range(world_size):
        folder = io / f"r{r}"
        folder.mkdir()
        os.chmod(folder, 0o755)
        for name in (wire.OUT_SLOT, "log.txt"):
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                os.fchmod(fd, 0o644)
                if os.geteuid() == 0:
                    os.fchown(fd, sandbox.SANDBOX_UID, sandbox.SANDBOX_GID)
            finally:
                os.close(fd)
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
    counted: dict[str, int] = {}
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
        _note(counted, session, "loaded")
        session.check_threads("the solution was imported")
        solution_call.call(session, "warm", "setup", limits.get("setup", 120.0))
        _note(counted, session, "called")
        session.check_threads("its first call")
        session.begin("correctness")
        session.watching = True
        for t in range(spec.trials):
            copied = solution_call.call(session, f"t{t}", "correctness", limits.get("correctness", 120.0))
            _note(counted, session, "called")
            session.check_threads(f"trial {t}")
            digests = solution_call.claimed(session, "called", {"name": f"t{t}"}, "digest")
            session.tell_judges(op="check_trial", t=t, nbytes=copied, digests=digests)
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
        session.check_engine("the correctness trials")
        bad = [(t["trial"], r) for t in trials for r in t["ranks"] if not r["ok"]]
        if bad:
            t, r = bad[0]
            raise Stop(Verdict.WRONG_OUTPUT, f"trial {t}, rank {r['rank']}: {r['error']}", [x["rank"] for _, x in bad])
        if spec.measure_timing:
            session.begin("timing")
            order = random.Random(seeds["order"])
            timing_s = limits.get("timing", 180.0)
            windows = timing_pass.timed_windows(session, warmup, iterations, plan.min_window_calls, timing_s, order)
            _note(counted, session, "timed")
            session.check_engine("the timed iterations")
            doc["timing"], message = timing_pass.timing_section(session, windows, warmup, timing_s, order)
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
            # Whether every rank's engine sealed its tables and the loaded code (mseal) before the solution loaded;
            # None where no rank got that far, False on a kernel without mseal (the comparisons at stops hold alone).
            "engine_sealed": session.engine_sealed(),
        }
        doc["flags"].update(_flags(counted))
        if session.restored_signals:
            doc["flags"]["signal_handlers_restored"] = sorted(session.restored_signals)
    if session.escaped and doc["verdict"] not in (Verdict.INFRA_ERROR.value,):
        doc["verdict"], doc["failed_ranks"] = Verdict.REJECTED.value, []
        doc["message"] = (
            f"the solution left {len(session.escaped)} process(es) running in the sandbox after the "
            f"evaluation ended (killed): {session.escaped[0]}"
        )


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
    """``text`` with the host folders the solution's sandbox binds named as the sandbox names them (a rank's mount
    table, /proc/self/mountinfo, gives each bind's source). Only those: the text may be the solution's own (a log, an
    exception's message), and a rewrite of any folder it cannot see would answer its guesses about the host (a red
    team confirmed the checkout's path by printing candidates and seeing which came back rewritten)."""
    # Text the solution wrote (a log, a thread's or a file's name) may hold bytes that are not UTF-8; the result is.
    text = text.encode("utf-8", "replace").decode("utf-8")
    pairs = [
        (session.cache, "/cache"),
        (session.io, "/io"),
        (session.solution_dir, "/solution"),
        (session.runtime, "/arena"),
        (session.workdir, "<evaluation>"),
    ]
    args = [str(a) for a in session.box.args] if session.box and isinstance(session.box.args, (list, tuple)) else []
    for k, a in enumerate(args[:-2]):
        if a in ("--bind", "--ro-bind", "--ro-bind-try", "--dev-bind", "--bind-try") and args[k + 1] != args[k + 2]:
            pairs.append((Path(args[k + 1]), args[k + 2]))
        elif a == "--setenv" and args[k + 1] == "PATH" and len(args[k + 2]) > 1:
            text = text.replace(args[k + 2], "<PATH>")
    named = [(str(host), shown) for host, shown in pairs] + [(_as_mounts_name_it(host), shown) for host, shown in pairs]
    for host, shown in sorted(named, key=lambda p: -len(p[0])):
        if host != "/":
            text = text.replace(host, shown)
    return text


def _as_mounts_name_it(path: Path) -> str:
    """``path`` relative to the root of its file system, as mountinfo gives a bind's source (/dev/shm/x is /x)."""
    try:
        device, top = os.stat(path).st_dev, Path(os.path.abspath(path))
        here = top
        while top.parent != top and os.stat(top.parent).st_dev == device:
            top = top.parent
        return "/" + str(here.relative_to(top)) if here != top else "/"
    except OSError:
        return str(path)
