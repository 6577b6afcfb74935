"""The timing protocol, run inside each rank process.

Per timed iteration, with inputs drawn afresh for that iteration (never seen before, so a result cached by
pointer, by call count or by content is wrong), for the baseline and the solution in an order drawn at random:
  1. (GPU) a spin kernel keeps the device busy, so every launch that follows is already queued when the device
     reaches it: the figure is device time, not the CPU's launch path;
  2. input buffers are refilled in place with this iteration's inputs and, on GPU, the L2 cache is flushed; which of
     the two sets of buffers the baseline gets and which the solution gets is drawn afresh each eager iteration,
     so where a set happens to sit in memory cannot favour either side;
  3. the ranks are aligned on the device by a one-element all-reduce (on CPU, a barrier);
  4. start event, the call, end event; the CPU time the call took to return is recorded beside it;
  5. the outputs are copied on the current stream right behind the end event (so work the solution left running on
     a side stream that the call did not join shows up as a wrong output rather than as a fast time), the harness
     checks that nothing it relies on was replaced — after both calls alike, so neither side follows a longer idle
     gap — and, on the device without waiting, every timed output of the solution is compared with the baseline's
     output for the same inputs and the solution's inputs with what it was given.
The launcher takes the slowest rank per iteration. After the eager figures, both callables are captured into
CUDA graphs where that works and replayed under the same protocol; results say which figure is which.

Between a call into the solution and the integrity check that follows it, the harness only uses functions it
bound before the solution was imported: a patch the solution installs during a call cannot act before it is seen.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.distributed as dist

from evaluator.correctness import _STRUCTSEQS, clone_inputs, count_bad, count_changed, structure
from evaluator.guard import Refusal

if TYPE_CHECKING:
    from evaluator.rank import Rank

_perf_counter = __import__("time").perf_counter
_all_reduce = dist.all_reduce
_barrier = dist.barrier
_Event = torch.cuda.Event
_EventBase = getattr(torch._C, "_CudaEventBase", None)
# The C methods behind torch.cuda.Event: a solution can replace the Python class's methods, never these.
_record = getattr(_EventBase, "record", None)
_elapsed = getattr(_EventBase, "elapsed_time", None)
_synchronize = torch.cuda.synchronize
_sleep = getattr(torch.cuda, "_sleep", None)
_TB = torch._C.TensorBase
_clone = _TB.clone
_copy = _TB.copy_
_item = _TB.item
_Tensor = torch.Tensor

L2_FLUSH_BYTES = 256 << 20  # several times the H200's 60 MB L2
SPIN_FLOOR_US = 200.0
MAX_REPORTED_ERRORS = 5


def _take(out: Any, clone: Any = _clone, tensor: type = _Tensor, tuple_: type = tuple, list_: type = list,
          type_: Any = type) -> tuple:
    """Copies of the outputs, queued on the current stream; anything that is not a plain tensor is kept as it is
    (and refused by the structure check) — no method of the solution's objects runs here."""
    items = out if (type_(out) is tuple_ or type_(out) is list_ or type_(out) in _STRUCTSEQS) else (out,)
    return tuple_(clone(x) if type_(x) is tensor else x for x in items)


class Timer:
    def __init__(self, rank: "Rank", seeds: list[int], verify: Callable[[], str | None]) -> None:
        self.r = rank
        cfg = rank.config
        self.iterations: int = cfg["timing_iterations"]
        self.warmup: int = cfg["warmup_iterations"]
        self.cuda = rank.device.type == "cuda"
        self.verify = verify
        # Secret seeds: the inputs of every iteration and the order of the interleaving cannot be predicted.
        self.input_rng = random.Random(seeds[0])
        self.order_rng = random.Random(seeds[-1])
        self.one = torch.ones(1, device=rank.device)
        self.stream = torch.cuda.current_stream(rank.device) if self.cuda else None
        if self.cuda:
            self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=rank.device)
            self.cycles_per_us = self._calibrate_spin()
        self.spin_us = SPIN_FLOOR_US
        self.shapes_vary = False
        # Allocated now, while every input of the correctness trials is still alive (the rank keeps them): the
        # solution's buffers sit at addresses it has never seen, on every rank alike, so a cache keyed by address
        # misses on its first timed call everywhere and hits everywhere after (wrong outputs, rather than ranks
        # that disagree on whether to communicate and wait for each other until the phase times out).
        first = self.fresh_inputs()
        self.buffers = {"baseline": clone_inputs(first), "solution": clone_inputs(first)}

    # -- device helpers -----------------------------------------------------------------------------------
    def _calibrate_spin(self) -> float:
        if _sleep is None:
            return 0.0
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _sleep(1000)
        _record(start, self.stream)
        _sleep(2_000_000)
        _record(end, self.stream)
        _synchronize()
        return 2_000_000 / (_elapsed(start, end) * 1000.0)

    def fresh_inputs(self) -> tuple:
        return tuple(self.r.inputs(self.input_rng.getrandbits(48)))

    def _prepare(self, buffers: tuple, source: tuple) -> tuple:
        """Returns the buffers the call gets: refilled in place when this draw has the same shapes, else new ones
        (problems with uneven counts per rank draw different shapes each time; graphs are then not offered)."""
        if self.cuda and _sleep is not None and self.cycles_per_us:
            _sleep(int(self.spin_us * self.cycles_per_us))
        same = len(buffers) == len(source) and all(
            type(dst) is not _Tensor or (type(src) is _Tensor and dst.shape == src.shape and dst.dtype == src.dtype)
            for dst, src in zip(buffers, source))
        if same:
            for dst, src in zip(buffers, source):
                if type(dst) is _Tensor:
                    _copy(dst, src)
        else:
            self.shapes_vary = True
            buffers = clone_inputs(source)
        if self.cuda:
            self.flush.zero_()
            _all_reduce(self.one)
        else:
            _barrier()
        return buffers

    # -- one measurement ----------------------------------------------------------------------------------
    def _measure(self, fns: dict[str, Callable[[], Any]], buffers: dict[str, tuple], iterations: int,
                 check: bool, swap: bool = False) -> dict[str, Any]:
        # Bound before any call into the solution (see the module's docstring).
        verify, take, perf, record, stream, cuda = self.verify, _take, _perf_counter, _record, self.stream, self.cuda
        tol = self.r.tol
        times: dict[str, list[float]] = {k: [] for k in fns}
        launch: dict[str, list[float]] = {k: [] for k in fns}
        events: dict[str, list[tuple]] = {k: [] for k in fns}
        bad_counts: list[tuple[int, Any]] = []
        changed_counts: list[tuple[int, Any]] = []
        errors: list[str] = []
        names = list(fns)
        for i in range(iterations):
            inputs = self.fresh_inputs()
            order = names[:]
            self.order_rng.shuffle(order)
            if swap and self.order_rng.random() < 0.5:  # the same draw on every rank: seeds are shared
                buffers["baseline"], buffers["solution"] = buffers["solution"], buffers["baseline"]
            outs: dict[str, Any] = {}
            for name in order:
                buffers[name] = self._prepare(buffers[name], inputs)
                if cuda:
                    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
                    record(start, stream)
                    h0 = perf()
                    out = fns[name]()
                    h1 = perf()
                    record(end, stream)
                    events[name].append((start, end))
                else:
                    h0 = perf()
                    out = fns[name]()
                    h1 = perf()
                    times[name].append((h1 - h0) * 1e6)
                launch[name].append((h1 - h0) * 1e6)
                # The same host work follows both calls, so whichever runs second waits behind the same idle gap:
                # a gap after the solution's call only favoured the solution (docs/protocol.md, identical code).
                snapshot = take(out) if check else None
                problem = verify()
                if problem:
                    raise Refusal(problem)
                if check:
                    outs[name] = snapshot
                    if name == "solution":
                        changed_counts.append((i, count_changed(inputs, buffers[name])))
                del out
            if check:
                wrong = structure(outs["solution"], outs["baseline"])
                if wrong and wrong.gaming:
                    raise Refusal(f"while timed: {wrong.message}")
                if wrong:
                    errors.append(f"iteration {i}: {wrong.message}")
                else:
                    bad_counts.append((i, count_bad(outs["solution"], outs["baseline"], tol.atol, tol.rtol)))
            del outs, inputs
        if cuda:
            _synchronize()
            for name in names:
                times[name] = [_elapsed(s, e) * 1000.0 for s, e in events[name]]
        for i, count in bad_counts:
            n = _item(count) if count is not None else 0
            if n:
                errors.append(f"iteration {i}: {n} output values differ from the baseline's output for the same inputs")
        input_errors = []
        for i, count in changed_counts:
            n = _item(count) if count is not None else 1
            if n:
                input_errors.append(f"iteration {i}: the solution changed {n} values of its inputs")
        return {"times_us": times, "launch_us": launch, "rechecked": len(bad_counts) + len(errors) if check else 0,
                "recheck_errors": errors[:MAX_REPORTED_ERRORS], "recheck_failures": len(errors),
                "input_errors": input_errors[:MAX_REPORTED_ERRORS]}

    def _adapt_spin(self, launch: dict[str, list[float]]) -> None:
        """The spin must outlast the host's launch of everything queued behind it, or launch gaps leak in."""
        slowest = max(sorted(v)[len(v) // 2] for v in launch.values()) if launch else 0.0
        self.spin_us = max(SPIN_FLOOR_US, 3.0 * slowest + 50.0)

    def run(self) -> dict[str, Any]:
        buffers = self.buffers
        reference, solution = self.r.reference, self.r.solution
        eager = {"baseline": lambda: reference(*buffers["baseline"]),
                 "solution": lambda: solution(*buffers["solution"])}
        if self.warmup:
            warm = self._measure(eager, buffers, self.warmup, check=False, swap=True)
            if self.cuda:
                self._adapt_spin(warm["launch_us"])
        result = self._measure(eager, buffers, self.iterations, check=True, swap=True)
        report: dict[str, Any] = {
            "method": "cuda-events-behind-spin-kernel" if self.cuda else "host-perf-counter-after-barrier",
            "spin_us": self.spin_us if self.cuda else 0.0,
            "inputs": "fresh random inputs every iteration; every timed output checked against the baseline's",
            "eager": result,
            "graph": self._graph(buffers) if self.cuda else {"available": False, "reason": "CPU profile"},
        }
        return report

    def _graph(self, buffers: dict[str, tuple]) -> dict[str, Any]:
        """CUDA-graph replay figures, when both callables can be captured on every rank."""
        if self.shapes_vary:
            return {"available": False, "reason": "input shapes vary from one draw to the next; CUDA graphs need "
                                                  "static shapes"}
        verify = self.verify
        graphs: dict[str, Any] = {}
        outputs: dict[str, Any] = {}
        error = ""
        try:
            for name, fn in (("baseline", self.r.reference), ("solution", self.r.solution)):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    fn(*buffers[name])
                problem = verify()
                if problem:
                    raise Refusal(problem)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    outputs[name] = fn(*buffers[name])
                problem = verify()
                if problem:
                    raise Refusal(problem)
                graphs[name] = graph
        except Refusal:
            raise
        except Exception as exc:  # many solutions cannot be captured; that is a fact to report, not a failure
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        torch.cuda.synchronize()
        ok = torch.tensor([0 if error else 1], dtype=torch.int32, device=self.r.device)
        _all_reduce(ok, op=dist.ReduceOp.MIN)
        if int(ok.item()) == 0:
            return {"available": False, "reason": error or "another rank could not capture"}
        fns = {name: (lambda replay=g.replay, out=outputs[name]: (replay(), out)[1]) for name, g in graphs.items()}
        measured = self._measure(fns, buffers, self.iterations, check=True)
        measured["available"] = True
        return measured
