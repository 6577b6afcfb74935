"""The host's rule on the gate's wait (evaluator/host/timing_pass.py ``_short_gate``): on GPU hosts with device feeds a
timed call's stream reaches its gate and waits there while the judge spins and writes its inputs; a stream that waited
much less than the spin found its inputs already there, so its gate was armed ahead by something other than itself.
The rule reads the ranks' reports; here they are written as a rank's engine writes them."""

import os
from pathlib import Path

from evaluator import wire
from evaluator.contract.profiles import get_profile
from evaluator.host.host_clock import Windows
from evaluator.host.session import Peer, Session
from evaluator.host.timing_pass import _short_gate

SPIN_US = 447.0
WARMUP = 2


def _session(tmp_path: Path, waits: dict[int, list[float]]) -> Session:
    """Ranks whose timed reports of iterations 0, 1, ... carry ``waits`` (µs at the gate; -1: an ungated call)."""
    session = Session(tmp_path, get_profile("cpu-gloo-2"), tmp_path / "engine", tmp_path, tmp_path, tmp_path, 0)
    for rank, per_iteration in waits.items():
        r, w = os.pipe()
        os.close(w)
        peer = Peer(rank=rank, commands=None, reports=wire.Lines(r))
        os.close(r)
        for i, waited in enumerate(per_iteration):
            peer.add({"kind": "timed", "rank": rank, "i": i, "gate_us": waited, "launch_us": 10.0})
        session.ranks.append(peer)
    return session


def _windows() -> Windows:
    windows = Windows(calls=1, first_recorded=WARMUP)
    windows.solution_spin_us = windows.baseline_spin_us = SPIN_US
    return windows


def test_a_call_that_waited_the_spin_at_its_gate_is_not_refused(tmp_path: Path) -> None:
    session = _session(tmp_path, {0: [460.0, 470.0, 455.0, 800.0], 1: [451.0, 462.0, 459.0, 2000.0]})
    assert _short_gate(session, WARMUP, _windows()) is None


def test_a_call_whose_inputs_were_there_when_its_stream_reached_the_gate_is_refused(tmp_path: Path) -> None:
    # Identical code once measured 3.8 µs this way, when the engine recorded the gate's event after arming it: the
    # device ran the judge's context, spin and copy included, in between (the event now comes first).
    session = _session(tmp_path, {0: [460.0, 470.0, 455.0, 461.0], 1: [451.0, 462.0, 459.0, 3.8]})
    refusal = _short_gate(session, WARMUP, _windows())
    assert refusal is not None
    assert refusal.startswith("rank 1, timed iteration 1:")
    assert "3.8 µs at its gate for a spin of 447 µs" in refusal
    assert "armed by something other than the call's stream" in refusal


def test_only_timed_gated_calls_are_judged_by_their_wait(tmp_path: Path) -> None:
    # Warm-up calls run before the host sets the spin; a call whose inputs came through the slot reports -1.
    session = _session(tmp_path, {0: [1.0, 2.0, -1.0, -1.0]})
    assert _short_gate(session, WARMUP, _windows()) is None
    # Without a spin (CPU hosts) there is no gate to judge.
    cpu = _windows()
    cpu.solution_spin_us = 0.0
    assert _short_gate(_session(tmp_path, {0: [5.0, 5.0, 5.0, 5.0]}), WARMUP, cpu) is None
