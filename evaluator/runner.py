"""evaluate(spec) -> result document: checks the source statically, prepares a private working directory,
launches the ranks under the sandbox, and turns what they reported into exactly one verdict.

Verdicts for broken rules: ``rejected`` for gaming (tampering with the harness or the baseline, forged results,
ending the process early, outputs that are right only when not timed, physically impossible times, what the
sandbox refused); ``wrong_output`` for plain wrong values; ``runtime_error``/``timeout`` for crashes and hangs."""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator import roofline as rf
from evaluator import sandbox
from evaluator import static_checks
from evaluator import stats
from evaluator.launcher import LaunchOutcome, launch
from evaluator.contract.profiles import HardwareProfile, get_profile
from evaluator.contract.result import TIMING_PROTOCOL_REVISION, Verdict, empty_document
from evaluator.contract.spec import EvalSpec
from problems.registry import Problem, get

# Defaults per device: CPU timings on gloo are coarse and only prove the pipeline; GPU timings are the product.
ITERATIONS = {"cpu": (20, 3), "cuda": (100, 10)}
SUSPICIOUS_SPEEDUP = 20.0


def _seeds(spec: EvalSpec) -> list[int]:
    """Seeds for set-up, every trial, the timing pool and the order of the interleaving: drawn here, where the
    solution cannot see them, unless the spec pins one (tests do, for repeatable failures)."""
    base = spec.seed if spec.seed is not None else secrets.randbits(48)
    return [base + 7919 * i for i in range(1 + spec.trials + 4)]


def _uses_nccl(source: str) -> bool:
    needles = ("dist.all_reduce", "dist.all_gather", "dist.reduce_scatter", "dist.all_to_all", "dist.broadcast",
               "torch.distributed.", "dist.send", "dist.recv", "dist.isend", "dist.irecv", "batch_isend_irecv",
               "dist.reduce(", "dist.gather", "dist.scatter", "funcol.", "_functional_collectives")
    return any(n in source for n in needles)


def evaluate(spec: EvalSpec, workdir_parent: str | None = None, keep_workdir: bool = False, *,
             imported_inner: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    doc = empty_document()
    profile = get_profile(spec.profile)
    problem = get(spec.problem_id)
    if problem.imported and not imported_inner:
        # Imported suites (arena import-pkb): randomized or original inputs, decided and reported there.
        from evaluator.pkb import evaluate_imported

        return evaluate_imported(spec, problem, workdir_parent, keep_workdir)
    world_size = profile.world_size
    doc["problem"] = {"id": problem.id, "version": problem.version, "content_hash": problem.content_hash,
                      "suite": problem.suite, "preset": profile.preset, "world_size": world_size,
                      "params": problem.params(profile.preset, spec.params)}
    static = static_checks.check(spec.solution_source)
    doc["solution"] = {"name": spec.solution_name,
                       "sha256": hashlib.sha256(spec.solution_source.encode()).hexdigest(),
                       "uses_collectives_api": _uses_nccl(spec.solution_source)}
    doc["static_checks"] = static.as_dict()
    doc["flags"].update({"uses_nccl": static.uses_nccl, "nccl_calls": static.collectives,
                         "uses_collectives_api": doc["solution"]["uses_collectives_api"]})
    doc["profile"] = {"name": profile.name, "backend": profile.backend, "device": profile.device,
                      "world_size": world_size}
    refusal = _spec_refusal(spec, problem, profile)
    if refusal:
        doc["verdict"], doc["message"] = Verdict.INFRA_ERROR.value if "version" in refusal else \
            Verdict.REJECTED.value, refusal
        return doc
    if static.refused:
        doc["verdict"], doc["message"] = Verdict.REJECTED.value, static.message()
        doc["phases"]["total"] = round(time.monotonic() - started, 3)
        return doc

    iterations, warmup = ITERATIONS[profile.device]
    containment = sandbox.plan(profile.device, spec.timeouts, spec.solution_source)
    workdir = Path(tempfile.mkdtemp(prefix="arena-eval-", dir=workdir_parent or sandbox.workdir_root()))
    try:
        (workdir / "solution").mkdir()
        filename = Path(spec.solution_name).name if spec.solution_name.endswith(".py") else "solution.py"
        (workdir / "solution" / filename).write_text(spec.solution_source)
        sandbox_config = containment.prepare(workdir)
        (workdir / "config.json").write_text(json.dumps({
            "problem_id": problem.id, "preset": profile.preset, "world_size": world_size,
            "backend": profile.backend, "device": profile.device, "solution_file": filename,
            "trials": spec.trials, "measure_timing": spec.measure_timing,
            "params": problem.params(profile.preset, spec.params),
            "timing_iterations": spec.timing_iterations or iterations,
            "warmup_iterations": spec.warmup_iterations if spec.warmup_iterations is not None else warmup,
            "sandbox": sandbox_config,
        }))
        outcome = launch(workdir, world_size, _seeds(spec), spec.timeouts, containment=containment)
        _interpret(doc, outcome, problem, profile, world_size, spec.params)
        doc["containment"] = {**outcome.containment, **_rank_sandbox(outcome)}
        escaped = doc["containment"].get("escaped_processes") or []
        if escaped and doc["verdict"] != Verdict.INFRA_ERROR.value:
            doc["verdict"], doc["failed_ranks"] = Verdict.REJECTED.value, []
            doc["message"] = (f"the solution left {len(escaped)} process(es) running outside its rank's process group "
                              f"(killed when the evaluation ended): {escaped[0]}; nothing a solution starts may "
                              f"outlive its evaluation")
    finally:
        if not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    return doc


def _spec_refusal(spec: EvalSpec, problem: Problem, profile: HardwareProfile) -> str | None:
    if profile.world_size not in problem.world_sizes:
        return (f"{problem.id} supports world sizes {list(problem.world_sizes)}; profile {profile.name} has "
                f"{profile.world_size}")
    if spec.problem_version is not None and spec.problem_version != problem.version:
        return (f"this worker has {problem.id} version {problem.version}, the submission was made against version "
                f"{spec.problem_version}; update the worker's checkout")
    if spec.problem_hash is not None and spec.problem_hash != problem.content_hash:
        return f"this worker's copy of {problem.id} differs from the portal's (content hash); update the worker"
    if spec.trials < 1:
        return "at least one correctness trial is needed"
    return None


def _rank_sandbox(out: LaunchOutcome) -> dict[str, Any]:
    """What the ranks themselves reported about their containment (their uid and limits as seen from inside)."""
    reports = out.messages("sandbox")
    if not reports:
        return {"audit_hook": False}
    first = reports[0]
    return {"audit_hook": all(r.get("audit_hook") for r in reports),
            "integrity_snapshot": all(r.get("integrity_snapshot") for r in reports),
            "rank_uids": sorted({r.get("uid") for r in reports}), "rank_limits": first.get("limits"),
            "write_roots": first.get("write_roots")}


def _interpret(doc: dict[str, Any], out: LaunchOutcome, problem: Problem, profile: HardwareProfile,
               world_size: int, overrides: dict[str, Any] | None = None) -> None:
    doc["phases"] = dict(out.phase_seconds)
    doc["phases"]["launch_wall"] = out.wall_seconds
    doc["logs"] = out.logs()
    envs = out.messages("environment")
    if envs:
        doc["environment"] = {k: v for k, v in envs[0].items() if k not in ("rank", "seq", "kind", "at")}
        if profile.device == "cuda":
            doc["environment"]["gpus"] = sorted({e.get("gpu") for e in envs})
    trials: dict[int, list[dict[str, Any]]] = {}
    for m in out.messages("trial"):
        trials.setdefault(m["trial"], []).append({"rank": m["rank"], "ok": m["ok"], "error": m["error"],
                                                  "max_abs_error": m.get("max_abs_error")})
    doc["trials"] = [{"trial": t, "ranks": sorted(r, key=lambda x: x["rank"])} for t, r in sorted(trials.items())]
    errors = sorted(out.messages("error"), key=lambda m: m["at"])

    def finish(verdict: Verdict, message: str, ranks: list[int] | None = None) -> None:
        doc["verdict"], doc["message"], doc["failed_ranks"] = verdict.value, message, sorted(set(ranks or []))

    if out.channel_error:
        return finish(Verdict.REJECTED, out.channel_error)
    rejected = [e for e in errors if e["category"] == "rejected"]
    if rejected:
        return finish(Verdict.REJECTED, f"rank {rejected[0]['rank']}: {rejected[0]['message']}",
                      [e["rank"] for e in rejected])
    reporters = {e["rank"] for e in errors}
    # A rank that ended with status 0 before the harness finished, without reporting an error: the solution ended
    # the process (os._exit). Judged before the errors its peers report when they lose it.
    early = [r for r in out.ranks if not r.done and not r.killed and r.exit_code == 0 and r.rank not in reporters]
    if early:
        return finish(Verdict.REJECTED, "; ".join(f"rank {r.rank} exited in the {r.phase} phase before the harness "
                                                  f"finished (a solution must return, never end the process)"
                                                  for r in early), [r.rank for r in early])
    infra = [e for e in errors if e["category"] == "infra"]
    if infra:
        return finish(Verdict.INFRA_ERROR, f"rank {infra[0]['rank']} could not join the process group: "
                                           f"{infra[0]['message']}", [e["rank"] for e in infra])
    # Ranks that died on their own (a signal, a non-zero status) without reporting why.
    died = [r for r in out.ranks if not r.done and not r.killed and r.exit_code not in (0, None)
            and r.rank not in reporters]
    if errors:
        # A rank whose peer died fails too, with a connection error: that is a consequence, not a cause.
        causes = [e for e in errors if not _peer_failure(e["message"])]
        if not causes and died:
            return finish(Verdict.RUNTIME_ERROR, "; ".join(_death(r) for r in died), [r.rank for r in died])
        causes = causes or errors
        first = causes[0]
        failing = [e["rank"] for e in causes if e["phase"] == first["phase"]]
        verdict = Verdict.COMPILE_ERROR if first["category"] == "compile" else Verdict.RUNTIME_ERROR
        where = "while importing the solution" if first["category"] == "compile" else f"in the {first['phase']} phase"
        doc["traceback"] = first.get("traceback", "")
        return finish(verdict, f"rank {first['rank']} failed {where}: {first['message']}", failing)
    if out.timed_out:
        names = ", ".join(str(r) for r in out.timed_out)
        return finish(Verdict.TIMEOUT, f"the {out.timeout_phase} phase passed its limit; rank(s) {names} did not "
                                       f"finish it and every rank was stopped", out.timed_out)
    # The ranks that died on their own, not those the launcher killed once a peer had died.
    crashed = died or [r for r in out.ranks if r.exit_code not in (0, None) and not r.done]
    if crashed:
        return finish(Verdict.RUNTIME_ERROR, "; ".join(_death(r) for r in crashed), [r.rank for r in crashed])
    early = [r for r in out.ranks if not r.done]
    if early:
        return finish(Verdict.REJECTED, "; ".join(f"rank {r.rank} exited in the {r.phase} phase before the harness "
                                                  f"finished (a solution must not end the process)" for r in early),
                      [r.rank for r in early])
    bad = [(t["trial"], r) for t in doc["trials"] for r in t["ranks"] if not r["ok"]]
    if len(doc["trials"]) == 0:
        return finish(Verdict.INFRA_ERROR, "no correctness trial was reported")
    if bad:
        t, r = bad[0]
        return finish(Verdict.WRONG_OUTPUT, f"trial {t}, rank {r['rank']}: {r['error']}",
                      [r["rank"] for _, r in bad])
    timing_msgs = sorted(out.messages("timing"), key=lambda m: m["rank"])
    if not timing_msgs:
        return finish(Verdict.PASSED, f"correct on {len(doc['trials'])} trials × {world_size} ranks; not timed")
    doc["timing"], message = _timing(timing_msgs, world_size)
    if message:
        return finish(Verdict.REJECTED, message)
    roof = rf.roofline(problem, profile, world_size, overrides)
    base_us = doc["timing"]["baseline"]["median_us"]
    sol_us = doc["timing"]["solution"]["median_us"]
    roof["baseline_fraction"] = rf.fraction(roof["time_us"], base_us)
    roof["solution_fraction"] = rf.fraction(roof["time_us"], sol_us)
    doc["roofline"] = roof
    doc["flags"]["suspicious_speedup"] = doc["timing"]["speedup"] > SUSPICIOUS_SPEEDUP
    if rf.impossible(roof["time_us"], sol_us):
        return finish(Verdict.REJECTED, f"measured {sol_us:.2f} µs, below the {roof['time_us']:.2f} µs that the "
                                        f"{profile.name} hardware allows for this problem ({roof['bound']}-bound): "
                                        f"physically impossible, so the work was not all done or not all timed")
    finish(Verdict.PASSED, f"correct on {len(doc['trials'])} trials × {world_size} ranks; "
                           f"{doc['timing']['speedup']:.3f}× the baseline "
                           f"(± {doc['timing']['speedup_uncertainty']:.3f})")


def _death(r: Any) -> str:
    how = f"status {r.exit_code}"
    if r.exit_code is not None and r.exit_code < 0:
        try:
            how = f"signal {signal.Signals(-r.exit_code).name}"
        except ValueError:
            how = f"signal {-r.exit_code}"
    return (f"rank {r.rank} died ({how}) in the {r.phase} phase without reporting an error (a crash in native "
            f"code, a signal, or os._exit)")


_PEER_FAILURE_SIGNS = ("connection closed by peer", "connection reset", "remote process exited", "aborted",
                       "broken pipe", "distbackenderror", "socket", "timed out", "peer", "gloo")


def _peer_failure(message: str) -> bool:
    text = message.lower()
    return any(sign in text for sign in _PEER_FAILURE_SIGNS)


def _timing(msgs: list[dict[str, Any]], world_size: int) -> tuple[dict[str, Any], str | None]:
    eager = [m["eager"] for m in msgs]
    recheck_errors = [f"rank {m['rank']}, {e}" for m, g in zip(msgs, eager) for e in g["recheck_errors"]]
    input_errors = [f"rank {m['rank']}, {e}" for m, g in zip(msgs, eager) for e in g.get("input_errors", [])]
    base = stats.slowest_rank([m["times_us"]["baseline"] for m in eager])
    sol = stats.slowest_rank([m["times_us"]["solution"] for m in eager])
    sp = stats.speedup(base, sol)
    timing: dict[str, Any] = {
        "method": msgs[0]["method"],
        "protocol_revision": TIMING_PROTOCOL_REVISION,
        "figure": "device time per call, slowest rank per iteration, median over iterations"
                  if msgs[0]["method"].startswith("cuda") else
                  "host time per call after a barrier, slowest rank per iteration, median over iterations; coarse: "
                  "CPU profiles exist to test the whole pipeline, and their speedups say nothing about GPU kernels",
        "spin_us": msgs[0].get("spin_us", 0.0),
        "iterations": len(base),
        "baseline": stats.summarize(base),
        "solution": stats.summarize(sol),
        "speedup": sp["speedup"], "speedup_ci": [sp["ci_low"], sp["ci_high"]],
        "speedup_uncertainty": sp["uncertainty"], "speedup_estimator": "median of per-iteration ratios",
        "ratio_of_medians": sp["ratio_of_medians"],
        "launch_cpu_us": {k: stats.summarize(stats.slowest_rank([m["launch_us"][k] for m in eager]))["median_us"]
                          for k in ("baseline", "solution")},
        "rechecked_outputs": sum(m["rechecked"] for m in eager),
        "graph": None,
    }
    graphs = [m["graph"] for m in msgs]
    if all(g.get("available") for g in graphs):
        gb = stats.slowest_rank([g["times_us"]["baseline"] for g in graphs])
        gs = stats.slowest_rank([g["times_us"]["solution"] for g in graphs])
        gsp = stats.speedup(gb, gs)
        recheck_errors += [f"rank {m['rank']}, CUDA graph replay {e}" for m, g in zip(msgs, graphs)
                           for e in g["recheck_errors"]]
        input_errors += [f"rank {m['rank']}, CUDA graph replay {e}" for m, g in zip(msgs, graphs)
                         for e in g.get("input_errors", [])]
        timing["graph"] = {"method": "cuda-graph-replay-behind-spin-kernel", "baseline": stats.summarize(gb),
                           "solution": stats.summarize(gs), "speedup": gsp["speedup"],
                           "speedup_ci": [gsp["ci_low"], gsp["ci_high"]]}
    else:
        timing["graph"] = {"available": False,
                           "reason": next((g.get("reason") for g in graphs if not g.get("available")), "")}
    if input_errors:
        return timing, (f"the solution wrote to its inputs while being timed ({input_errors[0]}): a solution must "
                        f"not write to its inputs")
    if recheck_errors:
        return timing, (f"outputs produced while being timed were wrong although the correctness trials passed "
                        f"({recheck_errors[0]}): results that depend on being timed, cached from earlier calls, "
                        f"or left running on another stream are not allowed")
    return timing, None
