"""One rank of the judge: ``main([_, RANK, COMMAND_FD, REPORT_FD, FEED_FD, LINK_FD])``, inside the judge's own sandbox
(evaluator/host/sandbox.py), forked by its first process like the solution's ranks.

It never loads solution code. It makes this rank's inputs from secret seeds it alone (with the other judge ranks)
is given, runs the problem's reference for the expected outputs, times the baseline under the timing protocol, and
later checks what the solution's ranks wrote back:
  prepare        the process group, the warm-up and trial inputs and the expected outputs (kept in this process),
                 and the baseline's engine; on GPU hosts the device feeds (below), the solution's rank's sent to it
                 over the link the host made between the two (LINK_FD);
  show N         the inputs of call N (the warm-up call, a trial, or timed iteration N) written to this rank's feed
                 slot (wire.Slot) at the opening of the solution's window for it; the solution's rank of the same
                 number reads it through a descriptor the host gave it alone. On GPU hosts the slot holds only the
                 frame's head and the data goes to that rank's device feed, device memory of this process's that
                 the rank maps by a descriptor sent to it alone, and only at the call's gate: once the call's stream
                 has reached it, a CUDA context this process keeps for the gates spins, writes the inputs there and
                 opens it (``_gate``);
  feed I K       the inputs of timed window I (K calls, each on inputs drawn from a seed of its own), made only
                 when the host asks, after window I-1 ended;
  bshow I        the same inputs written to the baseline's own feed slot, at the opening of the baseline's window;
  baseline I K   the baseline timed once on them (K calls back to back) through the same compiled engine as the
                 solution (inputs read from the slot into fresh storage, its outputs written to a slot of its own),
                 and a fingerprint of them kept (values at secret random positions). The host interleaves these with
                 the solution's steps, so both run under the same conditions and take the same steps between the
                 host's command and reply;
  spin US        the spin in front of the baseline's timed calls from now on (the host sets one for both sides);
  baseline_done  the baseline's samples, reported once every iteration has run;
  check_trial T  the solution's outputs of trial T (copied out of the sandbox's view by the host when its ranks said
                 they were done) against the expected ones, in full, on this rank's device; its inputs unchanged;
  check_timed I  the solution's outputs of timed iteration I: structure, finite values, and the fingerprint.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.judge.compare import as_tuple, clone_inputs, compare, structure
from evaluator.timer.protocol import open_engine
from evaluator.timer.spin import spin_us
from problems.registry import get

FINGERPRINT_POSITIONS = 4096  # per output tensor of a timed iteration
FEED_PROBES = 4096  # bytes of the solution's feed slot read to see it was zeroed after a call
# A device feed holds the largest of the untimed calls' frames times this: timed draws of a problem whose sizes vary
# (token counts, halo widths) come from the same distribution. A frame that does not fit goes through host memory, on
# both sides alike.
DEVICE_FEED_ROOM = 1.25
MAX_REPORTED = 5


def _outputs(values: Any) -> list[Any]:
    return list(as_tuple(values))


class SlotChanged(Exception):
    """What the host copied out of a rank's output slot is not the frame the rank's engine wrote before replying."""


SLOT_CHANGED = (
    "the output slot changed after the rank replied that its call was done (what the host copied is not the frame "
    "the engine wrote): outputs must be complete when the call returns, and nothing may write to the slot after it"
)


class JudgeRank:
    def __init__(self, rank: int, report_fd: int, config: dict[str, Any], feed_fd: int, link_fd: int) -> None:
        self.rank = rank
        self.fd = report_fd
        self.config = config
        self.world_size: int = config["world_size"]
        self.problem = get(config["problem_id"])
        self.preset = self.problem.presets[config["preset"]]
        self.tol = self.problem.tolerance(self.preset.dtype)
        self.private = Path(config["private"]) / f"r{rank}"
        self.private.mkdir(parents=True, exist_ok=True)
        self.exchange = Path(config["exchange"])
        self.seeds: dict[str, Any] = config["seeds"]
        self.device = torch.device("cpu")
        self.fingerprints: dict[int, list[Any]] = {}
        self.expected: dict[int, list[Any]] = {}  # per trial: the reference's outputs
        self.given: dict[int, list[Any]] = {}  # per trial: the inputs as the solution was given them
        self.positions = torch.Generator().manual_seed(self.seeds["positions"])
        self.probes = torch.Generator().manual_seed(self.seeds["positions"] ^ 0x5EED)  # where a feed's zeros are read
        pinned = config["device"] == "cuda"
        # The host made the feed slot (it gave the solution's rank a read-only descriptor of it) and makes the copy
        # of the solution's outputs; the baseline's own outputs go to a slot only this process sees.
        # The solution's rank of the same number holds the other descriptor of this memory file (the host made it).
        self.feed_slot = wire.Slot(feed_fd, writable=True, pinned=pinned, name=wire.FEED_SLOT)
        self.baseline_feed = wire.Slot.open(self.private / wire.BASELINE_FEED_SLOT, writable=True, pinned=pinned)
        self.drawn: tuple[int, list[Any]] | None = None  # the current timed iteration's inputs, until both are shown
        self.drawn_frame: Any = None  # a window of several calls: its inputs laid out as a frame ahead
        self.baseline_key = (0, 0)  # what the baseline's feed frame is masked under (_write_feed)
        self.untimed: dict[str, list[Any]] = {}  # the warm-up call's and the trials' inputs, by call name
        self.own_out = wire.Slot.open(self.private / wire.BASELINE_SLOT, writable=True, pinned=pinned)
        self.returned: wire.Slot | None = None
        self.pinned = pinned
        self.feed_extent = 0  # how far the last frame written into the solution's feed slot reached
        self.link = link_fd  # to the solution's rank of the same number: its device feed's descriptor, once
        # GPU hosts: byte tensors over the solution's rank's device feed and the baseline's own (both or neither).
        self.device_feed: Any = None
        self.own_device_feed: Any = None
        # GPU hosts: byte tensors over the device memory each side writes its outputs to (both or neither).
        self.device_out: Any = None
        self.own_device_out: Any = None
        self.taken_out: Any = None  # this process's copy of a solution's device frame, as large as its out feed
        # GPU hosts with device feeds: the device address of each side's gate's release (by ``solution``), and the
        # memory the gates copy a call's inputs from, with the values last laid out there (_gate).
        self.releases: dict[bool, int] = {}
        self.gate_source: Any = None
        self.laid_out: list[Any] | None = None

    def send(self, kind: str, **payload: Any) -> None:
        wire.send(self.fd, kind, rank=self.rank, **payload)

    def inputs(self, seed: int) -> tuple:
        return tuple(
            self.module.make_inputs(
                self.rank, self.world_size, seed, self.device, self.preset.dtype, **self.config["params"]
            )
        )

    def on_device(self, values: list[Any]) -> list[Any]:
        """``values`` (tensors, Nones, lists of them) copied onto this rank's device, where the comparison runs."""
        if self.device.type == "cpu":
            return values
        return [
            self.on_device(v) if isinstance(v, list) else v.to(self.device) if type(v) is torch.Tensor else v
            for v in values
        ]

    # -- prepare ------------------------------------------------------------------------------------------
    def prepare(self) -> None:
        cfg = self.config
        init = f"file://{Path(cfg['private']) / 'store'}"
        if cfg["device"] == "cuda":
            self.device = torch.device("cuda", self.rank)
            torch.cuda.set_device(self.device)
            dist.init_process_group(
                cfg["backend"], init_method=init, rank=self.rank, world_size=self.world_size, device_id=self.device
            )
        else:
            torch.set_num_threads(1)
            dist.init_process_group(cfg["backend"], init_method=init, rank=self.rank, world_size=self.world_size)
        self.module = self.problem.load_reference()
        # Loaded whether or not the baseline is timed: every feed frame is masked by it (_write_feed).
        self.engine = compiled_timer.load(cfg["timer"])
        self.untimed["warm"] = list(self.inputs(self.seeds["warm"]))
        for t, seed in enumerate(self.seeds["trials"]):
            self.untimed[f"t{t}"] = list(self.inputs(seed))
        if cfg["measure_timing"]:
            self._open_timer()
        # The solution's rank waits for the offer to finish booting: made before the references run, or on GPU
        # hosts right after the first, whose outputs size the device memory the outputs go to.
        offered = self.device.type != "cuda" or not cfg["measure_timing"] or not self.seeds["trials"]
        if offered:
            self._offer_device_feed(None)
        for t in range(len(self.seeds["trials"])):
            inputs = self.untimed[f"t{t}"]
            expected = _outputs(self.module.solution(*clone_inputs(tuple(inputs))))
            if not offered:
                self._offer_device_feed(expected)
                offered = True
            # Kept in this process's memory (not on the device: the solution's ranks need it), never in a file.
            self.expected[t] = [o.to("cpu", copy=True) if type(o) is torch.Tensor else o for o in expected]
            # The trial's inputs as made: the judge's own tensors, which only the reference's clone and the feed's
            # copies read, kept until the trial is checked (a copy of each, 1.5 GB a trial for tp_mlp at its bench
            # size, cost the set-up a transfer to host memory and the check one back).
            self.given[t] = inputs
        self.send("expected", trials=len(self.seeds["trials"]))
        if cfg["measure_timing"]:
            # Sealed as the solution's engine is (_engine.cpp seal_engine), though nothing here is untrusted: both
            # sides then pay the same comparison of the tables of library addresses after every call, and no object
            # whose table the comparison reads can be unloaded under it.
            self.engine.seal()
        self.send(
            "prepared",
            device_feed_bytes=0 if self.device_feed is None else int(self.device_feed.numel()),
            device_out_bytes=0 if self.device_out is None else int(self.device_out.numel()),
        )

    def _offer_device_feed(self, expected: list[Any] | None) -> None:
        """GPU hosts: device memory for the solution's rank's inputs and for the baseline's, each sized for the
        largest untimed call, and for each side's outputs, sized for an untimed call's outputs (``expected``, the
        first trial's) and inputs after it; the solution's rank's two sent (as descriptors) to the solution's rank of
        this number over the link, whose boot waits for them. Elsewhere, or where the device has no room, the link
        carries no descriptor and both sides' frames pass through host memory, as on CPU hosts."""
        fds: list[int] = []
        gate = -1
        sizes: list[int] = []
        if expected is not None and self.device.type == "cuda" and self.config["measure_timing"]:
            largest = 0
            for values in self.untimed.values():
                head, _, total = wire.frame_layout(values)
                largest = max(largest, len(head) + total)
            kinds = [("inputs", largest)]
            try:
                head, _, total = wire.frame_layout([*expected, *self.untimed["t0"]])
                kinds.append(("outputs", len(head) + total))
            except ValueError:  # an output no frame can hold: the solution's is refused as it returns, in any case
                pass
            for kind, size in kinds:
                want = max(int(size * DEVICE_FEED_ROOM), 1)
                outputs = kind == "outputs"
                # The solution's first: the baseline's engine writes to its own as soon as it has one, so it has
                # one only once the solution's rank is sure to have its counterpart (both sides alike, or neither).
                try:
                    fd, theirs = self.engine.make_device_feed(want, True, outputs)
                except RuntimeError:  # no room on the device, or no digest: these frames stay in host memory
                    break
                gate_fd = -1
                try:
                    # The judge's copy of the solution's frames, made once: a copy allocated per check would move
                    # the baseline's own allocations about.
                    taken = torch.empty_like(theirs) if outputs else None
                    _, own = self.engine.make_device_feed(want, False, outputs)
                    # An input feed's gate: the release page of each side, the solution's sent with its feed, and
                    # the memory the gates copy from (made last: a trial gate on the baseline's feed runs there).
                    gate_fd, theirs_release = self.engine.make_gate(True) if not outputs else (-1, 0)
                    own_release = self.engine.make_gate(False)[1] if not outputs else 0
                    source = self.engine.make_gate_source(want) if not outputs else None
                except RuntimeError:  # torch's out-of-memory error is one
                    for made in (fd, gate_fd):
                        if made >= 0:
                            os.close(made)
                    break
                if outputs:
                    self.own_device_out, self.device_out, self.taken_out = own, theirs, taken
                else:
                    self.own_device_feed, self.device_feed = own, theirs
                    self.releases = {True: theirs_release, False: own_release}
                    self.gate_source = source
                    gate = gate_fd
                fds.append(fd)
                sizes.append(int(theirs.numel()))
        if fds:
            fds.append(gate)  # last: the input feed's gate
        with socket.socket(fileno=self.link) as link:
            if fds:
                socket.send_fds(link, [" ".join(map(str, sizes)).encode()], fds)
            else:
                link.send(b"0")
        for fd in fds:
            os.close(fd)

    def _open_timer(self) -> None:
        read_fd, self.timer_write_fd = os.pipe()
        os.set_blocking(read_fd, False)  # read between steps for what is there; the engine writes before it returns
        open_engine(self.engine, self.timer_write_fd, dist.group.WORLD, self.device)
        self.reader = compiled_timer.SampleReader(read_fd)
        self.spin_us = spin_us([], self.device.type == "cuda")
        self.engine.set_spin(self.spin_us)

    def time_baseline(self, i: int, calls: int) -> None:
        t0 = time.perf_counter()
        step = self.engine.step(
            True, self.module.solution, self.baseline_feed.fd, self.own_out.fd, calls, key=self.baseline_key
        )
        t1 = time.perf_counter()
        warmup = self.config["warmup_iterations"]
        # Replied before the fingerprint is taken: the solution's window ends at its ranks' reply too, and the host's
        # copy of its outputs falls outside it. The launch time sizes the spin the host sets for both sides.
        self.send(
            "baselined",
            i=i,
            calls=calls,
            launch_us=step["launch_us"],
            elapsed_us=step["elapsed_us"],
            nbytes=step["nbytes"],
            gate_us=step["gate_us"],
            steps_us={"measure": (t1 - t0) * 1e6, **{k: step["steps_us"][k] for k in ("save", "calls", "between")}},
        )
        if i >= warmup:
            values, n_out = self.own_out.read_frame(step["nbytes"], self.own_device_out)
            self.fingerprints[i] = self._fingerprint(values[:n_out])
        self.reader.read_available()
        # The host opens no window until this work is done: the next command could be the solution's, whose window
        # (the judge's writing of its inputs first) would otherwise carry the baseline's fingerprints.
        self.send("kept", i=i)

    def set_spin(self, us: float) -> None:
        """The spin in front of the baseline's timed calls from now on: the host sets the same for both sides."""
        self.spin_us = us
        self.engine.set_spin(us)
        self.send("spun")

    def baseline_done(self, since: int) -> None:
        """The baseline's samples from timed iteration ``since`` on: one pass's (the host may time a second)."""
        self.engine.release()
        self.reader.drain()
        samples = self.reader.samples[since:]
        self.send(
            "baseline",
            since=since,
            times_us=[s[0] for s in samples],
            launch_us=[s[1] for s in samples],
            spin_us=self.spin_us,
            method="cuda-events-behind-spin-kernel" if self.device.type == "cuda" else "host-windows-by-the-host",
        )

    def _fingerprint(self, outputs: list[Any]) -> list[Any]:
        prints = []
        for out in outputs:
            if type(out) is not torch.Tensor:
                prints.append(None)
                continue
            flat = out.detach().reshape(-1)
            n = flat.numel()
            k = min(n, FINGERPRINT_POSITIONS)
            # Drawn by torch (with repeats) rather than random.sample: the draw is inside the host-clock window.
            positions = (
                torch.randint(n, (k,), generator=self.positions, dtype=torch.int64)
                if n > k
                else torch.arange(n, dtype=torch.int64)
            )
            positions = positions.to(flat.device)
            values = flat[positions].clone() if n else flat.clone()
            prints.append((tuple(out.shape), out.dtype, positions, values))
        return prints

    # -- feeding and checks -------------------------------------------------------------------------------
    def feed(self, i: int, calls: int) -> None:
        """Draws the inputs of timed window ``i``'s ``calls`` calls and keeps them: neither side sees them before its
        own window. Each call's are drawn from a seed of its own (the window's for the first), so no call's inputs
        repeat another's."""
        t0 = time.perf_counter()
        drawn: list[Any] = []
        for seed in window_seeds(self.seeds["timing"][i], calls):
            drawn.extend(self.inputs(seed))
        self.drawn = (i, drawn)
        if self.gate_source is not None and calls == 1:
            self._lay_out_source(drawn)  # here, between windows, not inside the first side's
        # Several calls' inputs are laid out once, here, between windows: each side's window then opens with one
        # copy of them, whose time varies far less than a frame's value-by-value writing (the host's clock takes
        # the baseline's spread as its noise).
        self.drawn_frame = wire.frame_bytes(drawn) if calls > 1 else None
        self.send(
            "fed",
            i=i,
            calls=calls,
            values=len(drawn),
            nbytes=sum(v.numel() * v.element_size() for v in drawn if type(v) is torch.Tensor),
            steps_us={"draw": (time.perf_counter() - t0) * 1e6},
            feed_kept=self._feed_kept(),
        )

    def _feed_kept(self) -> bool:
        """Whether the solution's feed slot still holds data of the last frame written into it, at FEED_PROBES
        positions drawn at random (its rank's engine zeroes the file's data once a call's inputs are in their own
        storage). Read from the file's own pages, between two windows: a rank that remapped its view of the feed
        privately, or answered the host's commands without the engine, left its inputs there for a peer. A device
        feed's data stays where the gate wrote it, as the call's own inputs: it reached the feed only once every
        rank's stream had passed the alignment in front of its call."""
        # Within the file's size as it is now (the rank holds a descriptor: reading a mapping past the end of a file
        # it shrank kills the reader), and the ranks are stopped while the judge reads.
        end = min(self.feed_extent, self.feed_slot.size, os.fstat(self.feed_slot.fd).st_size)
        if end <= wire.FRAME_HEAD.size or self.feed_slot.bytes is None:
            return False
        at = torch.randint(wire.FRAME_HEAD.size, end, (FEED_PROBES,), generator=self.probes)
        return bool(self.feed_slot.bytes[at].any())

    def show(self, i: int | None, baseline: bool, name: str | None = None) -> None:
        """Writes the inputs of call ``name`` (the warm-up call or a trial) or of timed iteration ``i`` into the
        solution's feed slot, or for the baseline into a slot of the judge's own, at the start of that side's window
        by the host's clock: the solution's rank holds a descriptor of its feed slot, so inputs written there any
        earlier could be read, and worked on, off every clock."""
        kept = False
        if name is not None:
            kept = self._feed_kept()  # an untimed call: no window is open yet
            key = self._write_feed(self.feed_slot, self.device_feed, self.untimed.pop(name), None, True, timed=False)
        else:
            assert self.drawn is not None and self.drawn[0] == i, "inputs shown before they were drawn"
            if baseline:
                key = self._write_feed(
                    self.baseline_feed, self.own_device_feed, self.drawn[1], self.drawn_frame, False, True
                )
                self.baseline_key = key
            else:
                key = self._write_feed(self.feed_slot, self.device_feed, self.drawn[1], self.drawn_frame, True, True)
        # The solution's key goes to the host, which sends it with the call's command to this rank's engine alone.
        extra: dict[str, Any] = {} if baseline else {"key": list(key)}
        if kept:
            extra["feed_kept"] = True
        self.send("bshown" if baseline else "shown", i=i, name=name, **extra)

    def _write_feed(
        self, slot: wire.Slot, device_feed: Any, values: list[Any], frame: Any, solution: bool, timed: bool
    ) -> tuple[int, int]:
        """One call's inputs into a side's feed: a gated frame where the side has a device feed and they fit (alike
        on both sides, which are given the same values and feeds of one size), its head in the slot now and its data
        written at the call's gate; else all of it into the slot; a window's frame (``frame``, laid out ahead in host
        memory) into the slot. Data in the slot is masked under a key drawn for this call (_engine.cpp mask_frame),
        which is returned: the side's engine unmasks it with that key. Written and masked while the side's ranks
        are stopped, so the slot never holds the inputs in the clear where a rank runs. Both sides alike: each
        window holds the same work."""
        gated = None
        if frame is None and device_feed is not None:
            token = int.from_bytes(os.urandom(8), "little") or 1
            gated = slot.write_gated(values, int(device_feed.numel()), token)
            if gated is not None:
                self._gate(device_feed, values, gated, token, timed, solution)
        if frame is not None:
            n = slot.write_frame(frame)
        elif gated is not None:
            n = 0  # the slot holds a head alone: nothing there for the feed's probes
        else:
            n = slot.write(values)
        key = compiled_timer.mask_key()
        if n:
            self.engine.mask_frame(slot.bytes[:n].numpy(), key)
        if solution:
            self.feed_extent = n
        return key

    def _lay_out_source(self, values: list[Any]) -> None:
        """``values`` laid out in the gates' source, once for both sides' windows, and waited for: the gates run in
        a context of their own, which sees this context's writes only once they are done."""
        if self.laid_out is not values and wire.lay_out_data(values, self.gate_source) is not None:
            torch.cuda.current_stream(self.device).synchronize()
            self.laid_out = values

    def _gate(
        self, device_feed: Any, values: list[Any], span: tuple[int, int], token: int, spin: bool, solution: bool
    ) -> None:
        """Queues one call's gate (evaluator/timer/_engine.cpp ``gate``): once the call's stream writes ``token`` to
        its feed, the spin (a timed call's), the inputs copied from the gates' source into ``device_feed`` at
        ``span``, and the release. Returns at once."""
        self._lay_out_source(values)
        start, end = span
        self.engine.gate(device_feed, self.gate_source, start, end, token, spin, self.releases[solution], solution)

    def check_trial(self, t: int, nbytes: int | None, digest: int | None) -> None:
        expected = self.on_device(self.expected.pop(t))
        given = self.on_device(self.given.pop(t))
        error, max_abs, gaming = self._check_returned(nbytes, digest, expected, given)
        self.send("trial", trial=t, ok=error is None, error=error, max_abs_error=max_abs, gaming=gaming)

    def _returned(self) -> wire.Slot:
        if self.returned is None:
            self.returned = wire.Slot.open(self.private / wire.RETURNED_SLOT, writable=False, pinned=self.pinned)
        return self.returned

    def _solution_frame(self, nbytes: int | None, digest: int | None) -> tuple[list[Any], int]:
        """The solution's frame of one call as the host copied it out of the rank's out slot (``nbytes``: how much;
        None: nothing to copy), with its data: the slot's own, or, for a frame whose data the rank wrote into its
        out feed in device memory, a copy of that data taken now. Its digest (``digest``, taken by the rank's engine
        as it replied: always for a device frame, for a timed call's frame in the slot) must be this copy's, else
        SlotChanged: something wrote there after the reply."""
        if not nbytes:
            raise ValueError("no outputs")
        returned = self._returned()
        frame = returned.view(nbytes)
        try:
            if len(frame) != nbytes:
                raise SlotChanged
            if not wire.is_device_frame(frame, nbytes):
                if digest is not None and digest >= 0 and self.engine.digest(frame) != digest:
                    raise SlotChanged
                return returned.read_frame(nbytes)
            if self.device_out is None:
                raise ValueError("a device frame from a rank given no device memory for its outputs")
            base, end, padding = wire.device_frame_span(frame, nbytes, wire.RETURNED_SLOT)
            if end > self.device_out.numel():
                raise ValueError("a device frame beyond the rank's device memory")
            # This process's own copy, taken once: what the digest covers is what is compared.
            data = self.taken_out
            data[base:end].copy_(self.device_out[base:end])
            if digest is None or self.engine.device_digest(frame, data[base:end]) != digest:
                raise SlotChanged
            # Bytes no reader compares could balance a late change under the digest: zero, as the engine writes them.
            if padding and bool(data[torch.cat([torch.arange(a, b) for a, b in padding]).to(data.device)].any()):
                raise SlotChanged
        finally:
            frame.release()
        return returned.read_frame(nbytes, data)

    def _check_returned(
        self, nbytes: int | None, digest: int | None, expected: list[Any], given: list[Any]
    ) -> tuple[str | None, Any, bool]:
        try:
            values, n_out = self._solution_frame(nbytes, digest)
            returned = self.on_device(values)
            outputs, after = returned[:n_out], returned[n_out:]
        except SlotChanged:
            return SLOT_CHANGED, None, True
        except Exception as exc:  # whatever the solution's process left there is data, and this is not ours
            return (
                f"the solution's outputs could not be read back ({type(exc).__name__}); it must return tensors",
                None,
                True,
            )
        mismatch = compare(tuple(outputs), tuple(expected), self.tol.atol, self.tol.rtol)
        if mismatch:
            return mismatch.message, mismatch.max_abs_error, mismatch.gaming
        changed = _changed_inputs(given, after)
        if changed:
            return changed, None, True
        return None, 0.0, False

    def check_timed(self, i: int, nbytes: int | None, digest: int | None) -> None:
        """``nbytes``: how much of the solution's output slot the host copied (None: it found nothing to copy);
        ``digest``: the CRC-32C of the frame the rank's engine took as it replied."""
        error = None
        prints = self.fingerprints.pop(i)
        t0 = time.perf_counter()
        t1 = t0
        try:
            # The returned slot is the host's copy, in a folder no sandbox sees: the digest is taken on its mapping,
            # with no copy of its own (a device frame's data is copied: the rank still maps it).
            values, n_out = self._solution_frame(nbytes, digest)
            t1 = time.perf_counter()
            outputs = values[:n_out]
            error = _against_fingerprint(outputs, prints, self.tol.atol, self.tol.rtol, self.device)
        except SlotChanged:
            error = SLOT_CHANGED
        except Exception as exc:
            error = f"the outputs of timed iteration {i} could not be read back ({type(exc).__name__})"
        self.send(
            "timed",
            i=i,
            ok=error is None,
            error=error,
            steps_us={"read": (t1 - t0) * 1e6, "check": (time.perf_counter() - t1) * 1e6},
        )

    def run(self, commands: Any) -> None:
        for line in commands:
            cmd = json.loads(line)
            op = cmd["op"]
            if op == "prepare":
                self.prepare()
            elif op == "feed":
                self.feed(cmd["i"], int(cmd["calls"]))
            elif op in ("show", "bshow"):
                self.show(cmd.get("i"), baseline=op == "bshow", name=cmd.get("name"))
            elif op == "baseline":
                self.time_baseline(cmd["i"], int(cmd["calls"]))
            elif op == "spin":
                self.set_spin(float(cmd["us"]))
            elif op == "baseline_done":
                self.baseline_done(int(cmd["since"]))
            elif op == "check_trial":
                self.check_trial(cmd["t"], cmd["nbytes"][self.rank], cmd["digests"][self.rank])
            elif op == "check_timed":
                self.check_timed(cmd["i"], cmd["nbytes"][self.rank], cmd["digests"][self.rank])
            elif op == "exit":
                return


def window_seeds(seed: int, calls: int) -> list[int]:
    """The seeds of a timed window's calls: the window's own for the first (a window of one call draws what it always
    did), then seeds drawn from it."""
    draw = random.Random(seed).getrandbits
    return [seed] + [draw(62) for _ in range(calls - 1)]


def _changed_inputs(given: list[Any], after: list[Any]) -> str | None:
    if len(given) != len(after):
        return "the solution's inputs came back in another number than they were given"
    for k, (g, a) in enumerate(zip(given, after)):
        # Shape and dtype first: torch.equal raises on some pairs of dtypes (float8 against float32), and what the
        # solution's process wrote back must never crash the judge into a verdict against the platform.
        if type(g) is torch.Tensor and (
            type(a) is not torch.Tensor or a.shape != g.shape or a.dtype != g.dtype or not torch.equal(a, g)
        ):
            return (
                f"the solution wrote to its input {k} (a solution must not write to its inputs, nor return "
                f"them as its output to be changed later)"
            )
    return None


def _against_fingerprint(outputs: Any, prints: list[Any], atol: float, rtol: float, device: torch.device) -> str | None:
    """``outputs`` (views of the copied slot, or of the judge's copy of a device frame) against the baseline's
    fingerprint (taken where the baseline's frame lay): structure, values at
    the secret positions (gathered here), and every value finite (checked on ``device``: tens of MiB per output)."""
    if not isinstance(outputs, list) or len(outputs) != len(prints):
        return f"returned {len(outputs) if isinstance(outputs, list) else '?'} outputs, the baseline {len(prints)}"
    for k, (out, fp) in enumerate(zip(outputs, prints)):
        if fp is None:
            continue
        shape, dtype, positions, values = fp
        # Where each side's frame lay (device or host memory) is the evaluator's choice per frame, not the output's:
        # the device each output was on is the engine's report, checked as the ranks reply (solution_call).
        wrong = structure(out, torch.empty((), dtype=dtype, device=out.device).expand(shape))
        if wrong:
            return f"output {k}: {wrong.message}"
        flat = out.reshape(-1)
        if out.dtype.is_floating_point and not bool(torch.isfinite(flat.to(device, non_blocking=True)).all()):
            return f"output {k} holds NaN or Inf"
        got = flat[positions.to(flat.device)] if flat.numel() else flat
        mismatch = compare((got,), (values.to(got.device),), atol, rtol)
        if mismatch:
            return f"output {k} differs from the baseline's output for the same inputs ({mismatch.message})"
    return None


def main(argv: list[str]) -> int:
    rank, fd, feed, link = (int(a) for a in (argv[1], argv[3], argv[4], argv[5]))
    commands = os.fdopen(int(argv[2]), "r")
    config = json.loads(commands.readline())
    judge = JudgeRank(rank, fd, config, feed, link)
    try:
        judge.run(commands)
    except BaseException as exc:  # the judge's own failure, or (imported suites) the reference failing on the inputs
        wire.send(
            fd,
            "judge_error",
            rank=rank,
            message=f"{type(exc).__name__}: {exc}"[:1000],
            imported=bool(judge.problem.imported),
            traceback=traceback.format_exc(limit=10)[-4000:],
        )
        return 1
    try:
        dist.destroy_process_group()
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
