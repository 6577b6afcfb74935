"""One call of the solution's ranks as the host drives it: its inputs shown by the judges, the engine's command,
the outputs copied out of the sandbox's view the moment the ranks reply, and the rules the engine's report carries
checked. The correctness trials (evaluator/host/evaluate.py) and the timed windows (evaluator/host/timing_pass.py)
both go through here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.contract.result import Verdict
from evaluator.host.session import Session, Stop


def call(session: Session, name: str, phase: str, limit_s: float) -> list[int | None]:
    """An untimed call (``warm``, or trial ``tN``): its inputs written to the ranks' feed slots, the call, and its
    outputs and inputs-after copied out of the sandbox's view at once; returns how many bytes of each rank's outputs
    were copied, for the judge."""
    session.tell_judges(op="show", name=name)
    session.wait(session.judges, "shown", limit_s, {"name": name})
    check_feeds_zeroed(session, "shown", f"before the {name} call" if name != "warm" else "before the warm-up call")
    trial = name.startswith("t")
    session.command_ranks(compiled_timer.CALL, int(name[1:]) if trial else 0, compiled_timer.TRIAL_FLAG if trial else 0)
    session.wait(session.ranks, "called", limit_s, {"name": name})
    session.freeze_ranks()
    copied = take_outputs(session, "called", {"name": name})
    check_returned(session, "called", f"the {phase} call" if name == "warm" else f"trial {name[1:]}")
    return copied


def check_returned(session: Session, kind: str, what: str) -> None:
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


def check_feeds_zeroed(session: Session, kind: str, when: str) -> None:
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


def claimed(session: Session, kind: str, match: dict[str, Any], field: str) -> list[Any]:
    """Each rank's ``field`` in its ``kind`` report with ``match``'s fields (None where it has none)."""
    return [
        next(
            (m.get(field) for m in reversed(p.of_kind(kind)) if all(m.get(k) == v for k, v in match.items())),
            None,
        )
        for p in session.ranks
    ]


def take_outputs(session: Session, kind: str, match: dict[str, Any]) -> list[int | None]:
    """Copies each rank's outputs of one call (its ``kind`` report with ``match``'s fields) out of the sandbox's view
    the moment the last rank says it is done, so nothing written afterwards (through a mapping or a descriptor kept
    open, say) reaches the judge's check. As many bytes as the rank says it wrote, at most what its slot holds; a
    missing slot, a link or anything but a plain file is not copied (None): the judge then reports the outputs
    missing."""
    copied: list[int | None] = []
    for p, said in zip(session.ranks, claimed(session, kind, match, "nbytes")):
        n = None
        if isinstance(said, int) and said > 0:
            try:
                n = copy_plain_file(
                    session.io / f"r{p.rank}" / wire.OUT_SLOT,
                    session.private / f"r{p.rank}" / wire.RETURNED_SLOT,
                    said,
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
