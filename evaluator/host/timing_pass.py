"""The timed pass of an evaluation: windows of the baseline and the solution on the same inputs, one after the other
in an order drawn per window, the host's own clock around each, and from them the result's timing section (figures
per call, the host's cross-check, a refusal by the clock confirmed by a second pass). Everything it needs comes in
as numbers and the session: the spec was resolved before (evaluator/host/plan.py)."""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from evaluator.analysis import stats
from evaluator import timer as compiled_timer
from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from evaluator.host import batch, host_clock, solution_call
from evaluator.host.host_clock import Windows
from evaluator.host.session import Session
from evaluator.timer.spin import GATE_HELD, spin_us


def timed_windows(
    session: Session, warmup: int, iterations: int, at_least: int, limit_s: float, order: random.Random
) -> Windows:
    """The first pass's windows, timed again at a larger size where the solution's warm-up cut them short."""
    windows = _time(session, 0, warmup, limit_s, order, iterations=iterations, at_least=at_least)
    return _retimed(session, windows, warmup, limit_s, order)


def timing_section(
    session: Session, windows: Windows, warmup: int, limit_s: float, order: random.Random
) -> tuple[dict[str, Any], str | None]:
    """The result's timing section from ``windows``, and the reason to refuse, if any (a refusal by the host's clock
    alone only once a second pass confirms it)."""
    timing, message, by_clock = _timing(session, windows.first_recorded, windows)
    if by_clock:
        timing, message = _confirmed(session, timing, message, warmup, windows, limit_s, order)
    return timing, message


def _confirmed(
    session: Session,
    first: dict[str, Any],
    message: str | None,
    warmup: int,
    first_pass: Windows,
    limit_s: float,
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
        limit_s,
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

    def draw(n: int) -> None:
        """Asks the judges to draw window ``n``'s inputs, choosing first, where ``n`` is the window to choose at, how
        many calls each window holds from there on (from the reports of the windows before it)."""
        if n == decide_at:
            windows.wanted = _calls_per_window(session, n, at_least)
            windows.calls = batch.within_budget(windows.wanted, _solution_call_us(windows, begin, n))
            windows.batched_from = n
            windows.end = warmup + batch.timed_windows(iterations, windows.calls)
        if n < windows.end:
            session.tell_judges(op="feed", i=n, calls=windows.calls)

    i = begin
    draw(i)
    while i < windows.end:
        left = max(0.1, deadline - time.monotonic())
        if i == warmup and warmup and calls is None:
            windows.solution_spin_us = windows.baseline_spin_us = _one_spin(session, windows.batched_from, warmup)
            _set_spin(session, windows.solution_spin_us, left)
        t0 = time.monotonic()
        if unchecked is not None:
            session.wait(session.judges, "timed", left, {"i": unchecked})
            unchecked = None
        session.wait(session.judges, "fed", left, {"i": i})
        solution_call.check_feeds_zeroed(
            session, "fed", f"before timed iteration {i - warmup}" if i >= warmup else "in the warm-up"
        )
        windows.spent("feed_and_check", t0, time.monotonic())
        baseline_first = order.random() < 0.5
        windows.baseline_first[i] = baseline_first
        if baseline_first:
            windows.baseline[i] = _time_baseline(session, windows, i, left)
            # The solution's window is the last: the judges draw the next window's inputs as soon as its ranks
            # reply, while the host stops them and copies their outputs (no window is open, and the gates of this
            # one have copied their inputs from the source the draw lays the next ones out in).
            # Not where the next window chooses how many calls it holds: that choice reads this solution's window.
            then = partial(draw, i + 1) if i + 1 != decide_at else None
        else:
            then = None
        windows.solution[i], copied[i] = _time_solution(session, windows, i, i >= warmup, left, then)
        digests[i] = solution_call.claimed(session, "timed", {"i": i}, "digest")
        if not baseline_first:
            windows.baseline[i] = _time_baseline(session, windows, i, left)
        if i >= warmup:
            unchecked = i
        i += 1
        # Both windows are shut and the ranks stopped: the judges draw the next window's inputs (unless they began
        # as the solution's window shut) and check this one's outputs on their device while the host reads the
        # stopped ranks' threads, which nothing has run since their reply (what a stop holds does not change while
        # it holds: Session.freeze_ranks).
        if then is None:
            draw(i)
        if unchecked is not None:
            session.tell_judges(
                op="check_timed", i=unchecked, nbytes=copied.pop(unchecked), digests=digests.pop(unchecked)
            )
        after = time.monotonic()
        session.check_threads(f"timed iteration {i - 1}")
        windows.spent("check_threads", after, time.monotonic())
        windows.spent("iteration", t0, time.monotonic())
    left = max(1.0, deadline - time.monotonic())
    if unchecked is not None:
        session.wait(session.judges, "timed", left, {"i": unchecked})
    session.tell_judges(op="baseline_done", since=max(begin, warmup))
    session.wait(session.judges, "baseline", left, {"since": max(begin, warmup)})
    windows.baseline_spin_us = max(float(p.last("baseline")["spin_us"]) for p in session.judges)
    windows.solution_spin_us = max(windows.solution_spin_us, windows.baseline_spin_us)  # one spin (_one_spin)
    session._pump(0.05)
    return windows


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


def _retimed(session: Session, windows: Windows, warmup: int, limit_s: float, order: random.Random) -> Windows:
    """A pass whose windows the solution's warm-up cut short (batch.within_budget) is timed again, on new inputs, at
    the size its timed calls allow, when that is at least twice as many calls: a solution slow in its warm-up only
    would otherwise choose small windows, and with them a loose bound on work hidden outside its samples."""
    again = batch.understated(windows.calls, windows.wanted, _solution_call_us(windows, warmup, windows.end))
    if again is None:
        return windows
    if session.profile.device == "cuda":
        # The spin must outlast the launch of a whole window (evaluator/timer/spin.py): it grows with the calls.
        _set_spin(session, windows.solution_spin_us * again / windows.calls, limit_s)
    second = _time(
        session,
        windows.end,
        warmup,
        limit_s,
        order,
        iterations=windows.end - windows.first_recorded,
        calls=again,
    )
    second.wanted = windows.wanted
    second.retimed_from = windows.calls
    return second


def _feed_kind(session: Session, field: str) -> str:
    """Where both sides' frames of one kind waited (``field``: the judges' "device_feed_bytes" for the inputs,
    "device_out_bytes" for the outputs): "device" where every judge's rank made device memory for them (GPU hosts: a
    frame that does not fit still passes through host memory, on both sides alike), else "host"."""
    sizes = [(p.first("prepared") or {}).get(field) for p in session.judges]
    return "device" if sizes and all(type(n) is int and n > 0 for n in sizes) else "host"


def _staging_kind(session: Session, calls: int) -> str:
    """Where a call's inputs were before the call's stream reached them on GPU hosts: "gated" where every side had a
    device feed and each window one call (none of a call's inputs is in the rank's process until the call's stream
    has reached its gate and the judge's gate, in a CUDA context of its own, has spun and written them there),
    "allocator" where they waited under the spin in a block of torch's caching allocator (which
    `torch.cuda.memory_snapshot()` lists to the solution: docs/threat-model.md), "host" on CPU hosts, where the inputs
    go straight into each call's own storage."""
    if session.profile.device != "cuda":
        return "host"
    return "gated" if calls == 1 and _feed_kind(session, "device_feed_bytes") == "device" else "allocator"


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
    session: Session,
    windows: Windows,
    i: int,
    record: bool,
    limit_s: float,
    then: Callable[[], None] | None = None,
) -> tuple[float, list[int | None]]:
    """The solution's window of iteration ``i`` by the host's clock, and how many bytes of each rank's outputs the
    host copied out for the judge (None for a rank with nothing to copy). The window opens before the judge writes
    the inputs where the ranks can read them, so whatever a rank does with them before its call is inside it.
    ``then`` runs once every rank has replied, before the ranks are stopped and their outputs copied."""
    # The ranks stay stopped while the judge writes their inputs (nothing of theirs can touch the feed slots then: a
    # slot shrunk under the judge's mapping once killed it), and run again with the command that starts the call.
    started = time.monotonic()
    session.tell_judges(op="show", i=i)
    session.wait(session.judges, "shown", limit_s, {"i": i})
    windows.solution_staged[i] = (_replied(session.judges, "shown", i) - started) * 1e6
    session.command_ranks(compiled_timer.TIME, i, compiled_timer.RECORD_FLAG if record else 0, windows.calls)
    session.wait(session.ranks, "timed", limit_s, {"i": i})
    ended = _replied(session.ranks, "timed", i)
    if then is not None:
        then()
    after = time.monotonic()
    session.freeze_ranks()
    windows.spent("freeze", after, time.monotonic())
    after = time.monotonic()
    copied = solution_call.take_outputs(session, "timed", {"i": i}) if record else []
    windows.spent("copy_outputs", after, time.monotonic())
    solution_call.check_returned(session, "timed", f"timed iteration {i}")
    return (ended - started) * 1e6, copied


def _time_baseline(session: Session, windows: Windows, i: int, limit_s: float) -> float:
    """The baseline's window of iteration ``i``, by the same steps as the solution's: the inputs written into a slot
    (the judge's own), then the engine's step on them."""
    started = time.monotonic()
    session.tell_judges(op="bshow", i=i)
    session.wait(session.judges, "bshown", limit_s, {"i": i})
    windows.baseline_staged[i] = (_replied(session.judges, "bshown", i) - started) * 1e6
    # Where the solution's window proves its ranks' stop before continuing them (Session.thaw_ranks): the same
    # reading of the same held threads, so the host's work in both windows is alike (without it, honest identical
    # code was refused by the host's clock on one H100), and a proof that they held through the baseline's inputs.
    session.prove_stop()
    session.tell_judges(op="baseline", i=i, calls=windows.calls)
    session.wait(session.judges, "baselined", limit_s, {"i": i})
    # After the window: the judges' fingerprint of the baseline's outputs, taken once they replied, is done before the
    # next window opens (it once fell into the solution's, as part of the judge's writing of the solution's inputs).
    session.wait(session.judges, "kept", limit_s, {"i": i})
    return (_replied(session.judges, "baselined", i) - started) * 1e6


def _gate_waits(peers: list, kind: str, warmup: int) -> list[tuple[int, int, float]]:
    """Each gated timed call's wait at its gate as ``peers`` reported it in their ``kind`` reports from ``warmup`` on:
    (rank, iteration, µs). Ungated calls report -1 and are left out."""
    return [
        (p.rank, m["i"], float(m["gate_us"]))
        for p in peers
        for m in p.of_kind(kind)
        if isinstance(m.get("i"), int) and m["i"] >= warmup and isinstance(m.get("gate_us"), (int, float))
        if m["gate_us"] >= 0
    ]


def _short_gate(session: Session, warmup: int, windows: Windows) -> str | None:
    """GPU hosts with device feeds: a timed call whose stream waited at its gate for less than GATE_HELD of the
    judge's spin (evaluator/timer/spin.py) did not wait for the spin: its gate was armed ahead, by a forged token,
    while the call's stream was held elsewhere, and its inputs were there before its start."""
    spin = windows.solution_spin_us
    short = [w for w in _gate_waits(session.ranks, "timed", warmup) if w[2] < GATE_HELD * spin]
    if not short or spin <= 0:
        return None
    rank, i, waited = short[0]
    return (
        f"rank {rank}, timed iteration {i - warmup}: the call's stream waited {waited:.1f} µs at its gate for a spin "
        f"of {spin:.0f} µs, so its inputs were written before it arrived: the gate was armed by something other than "
        f"the call's stream (a solution must not write to the evaluator's device feed)"
    )


def _replied(peers: list, kind: str, i: int) -> float:
    """When the last of ``peers`` reported ``kind`` for iteration ``i``, by the host's clock."""
    return max(next(m["received"] for m in reversed(p.of_kind(kind)) if m.get("i") == i) for p in peers)


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
    short = _short_gate(session, warmup, windows)
    if short:
        return {}, short
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
    clock["by_order"] = _by_order(windows, warmup, base, sol)
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
        "input_feed": _feed_kind(session, "device_feed_bytes"),
        "output_feed": _feed_kind(session, "device_out_bytes"),
        "input_staging": _staging_kind(session, k),
        "gate_wait_us": {
            side: (statistics.median(w[2] for w in waits) if waits else None)
            for side, waits in (
                ("baseline", _gate_waits(session.judges, "baselined", warmup)),
                ("solution", _gate_waits(session.ranks, "timed", warmup)),
            )
        },
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


def _by_order(windows: Windows, warmup: int, base: list[float], sol: list[float]) -> dict[str, Any]:
    """The median per-iteration speedup of the windows where the baseline was timed first and of those where the
    solution was: identical code reads the same in both unless a side's figure depends on what the device did just
    before it (a diagnosis, not a figure any check uses)."""
    out: dict[str, Any] = {}
    for name, first in (("baseline_first", True), ("solution_first", False)):
        ratios = [
            b / s
            for j, (b, s) in enumerate(zip(base, sol))
            if s > 0 and windows.baseline_first.get(warmup + j) is first
        ]
        out[name] = {"windows": len(ratios), "median_speedup": round(statistics.median(ratios), 4) if ratios else None}
    return out


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
