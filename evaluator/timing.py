"""The timing protocol, run inside each rank process.

Per timed iteration, for the baseline and the solution in an order drawn at random each iteration:
  1. (GPU) a spin kernel keeps the device busy, so every launch that follows is already queued when the device
     reaches it: the figure is device time, not the CPU's launch path;
  2. the callable's own input buffers are refilled in place from a pool of fresh random inputs (so a result
     cached by pointer or by call count is wrong) and, on GPU, the L2 cache is flushed;
  3. the ranks are aligned on the device by a one-element all-reduce (on CPU, a barrier);
  4. start event, the call, end event; the CPU time the call took to return is recorded beside it;
  5. on sampled iterations the solution's outputs are copied on the current stream right after the end event and
     checked afterwards against the reference's outputs for the same inputs: work left running on a side stream
     that the call did not join shows up as a wrong output rather than as a fast time.
The launcher takes the slowest rank per iteration. After the eager figures, both callables are captured into
CUDA graphs where that works and replayed under the same protocol; results say which figure is which.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.distributed as dist

from evaluator.correctness import as_tuple, clone_inputs, compare

if TYPE_CHECKING:
    from evaluator.rank import Rank

_perf_counter = __import__("time").perf_counter
_all_reduce = dist.all_reduce
_barrier = dist.barrier
_Event = torch.cuda.Event
_sleep = getattr(torch.cuda, "_sleep", None)

POOL_SIZE = 3
RECHECKS = 6
L2_FLUSH_BYTES = 256 << 20  # several times the H200's 60 MB L2
SPIN_FLOOR_US = 200.0


class Timer:
    def __init__(self, rank: "Rank", seeds: list[int]) -> None:
        self.r = rank
        cfg = rank.config
        self.iterations: int = cfg["timing_iterations"]
        self.warmup: int = cfg["warmup_iterations"]
        self.cuda = rank.device.type == "cuda"
        self.pool = [rank.inputs(s) for s in seeds[:POOL_SIZE]]
        # Expected outputs for each pooled input set, from the reference, before the solution is timed.
        self.expected = [tuple(x.clone() for x in as_tuple(rank.reference(*clone_inputs(p)))) for p in self.pool]
        self.order_rng = random.Random(seeds[-1])
        self.one = torch.ones(1, device=rank.device)
        if self.cuda:
            self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=rank.device)
            self.cycles_per_us = self._calibrate_spin()
        self.spin_us = SPIN_FLOOR_US

    # -- device helpers -----------------------------------------------------------------------------------
    def _calibrate_spin(self) -> float:
        if _sleep is None:
            return 0.0
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _sleep(1000)
        start.record()
        _sleep(2_000_000)
        end.record()
        torch.cuda.synchronize()
        return 2_000_000 / (start.elapsed_time(end) * 1000.0)

    def _refill(self, buffers: tuple, source: tuple) -> None:
        for dst, src in zip(buffers, source):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)

    def _prepare(self, buffers: tuple, p: int) -> None:
        if self.cuda and _sleep is not None and self.cycles_per_us:
            _sleep(int(self.spin_us * self.cycles_per_us))
        self._refill(buffers, self.pool[p])
        if self.cuda:
            self.flush.zero_()
            _all_reduce(self.one)
        else:
            _barrier()

    # -- one measurement ----------------------------------------------------------------------------------
    def _measure(self, fns: dict[str, Callable[[], Any]], buffers: dict[str, tuple], iterations: int,
                 record: bool) -> dict[str, Any]:
        times: dict[str, list[float]] = {k: [] for k in fns}
        launch: dict[str, list[float]] = {k: [] for k in fns}
        events: dict[str, list[tuple]] = {k: [] for k in fns}
        sampled = set(random.Random(iterations).sample(range(iterations), min(RECHECKS, iterations))) if record else set()
        snapshots: list[tuple[int, tuple]] = []
        names = list(fns)
        for i in range(iterations):
            p = i % len(self.pool)
            order = names[:]
            self.order_rng.shuffle(order)
            for name in order:
                self._prepare(buffers[name], p)
                if self.cuda:
                    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
                    start.record()
                    h0 = _perf_counter()
                    out = fns[name]()
                    h1 = _perf_counter()
                    end.record()
                    events[name].append((start, end))
                else:
                    h0 = _perf_counter()
                    out = fns[name]()
                    h1 = _perf_counter()
                    times[name].append((h1 - h0) * 1e6)
                launch[name].append((h1 - h0) * 1e6)
                if name == "solution" and i in sampled:
                    snapshots.append((p, tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in as_tuple(out))))
                del out
        if self.cuda:
            torch.cuda.synchronize()
            for name in names:
                times[name] = [s.elapsed_time(e) * 1000.0 for s, e in events[name]]
        recheck_errors = []
        for p, snap in snapshots:
            mismatch = compare(snap, self.expected[p], self.r.tol.atol, self.r.tol.rtol)
            if mismatch:
                recheck_errors.append(mismatch.message)
        return {"times_us": times, "launch_us": launch, "rechecked": len(snapshots), "recheck_errors": recheck_errors}

    def _adapt_spin(self, launch: dict[str, list[float]]) -> None:
        """The spin must outlast the host's launch of everything queued behind it, or launch gaps leak in."""
        slowest = max(sorted(v)[len(v) // 2] for v in launch.values()) if launch else 0.0
        self.spin_us = max(SPIN_FLOOR_US, 3.0 * slowest + 50.0)

    def run(self) -> dict[str, Any]:
        buffers = {"baseline": clone_inputs(self.pool[0]), "solution": clone_inputs(self.pool[0])}
        reference, solution = self.r.reference, self.r.solution
        eager = {"baseline": lambda: reference(*buffers["baseline"]),
                 "solution": lambda: solution(*buffers["solution"])}
        warm = self._measure(eager, buffers, self.warmup, record=False)
        if self.cuda:
            self._adapt_spin(warm["launch_us"])
        result = self._measure(eager, buffers, self.iterations, record=True)
        report: dict[str, Any] = {
            "method": "cuda-events-behind-spin-kernel" if self.cuda else "host-perf-counter-after-barrier",
            "spin_us": self.spin_us if self.cuda else 0.0,
            "eager": result,
            "graph": self._graph(buffers) if self.cuda else {"available": False, "reason": "CPU profile"},
        }
        return report

    def _graph(self, buffers: dict[str, tuple]) -> dict[str, Any]:
        """CUDA-graph replay figures, when both callables can be captured on every rank."""
        graphs: dict[str, Any] = {}
        outputs: dict[str, Any] = {}
        error = ""
        try:
            for name, fn in (("baseline", self.r.reference), ("solution", self.r.solution)):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    fn(*buffers[name])
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    outputs[name] = fn(*buffers[name])
                graphs[name] = graph
        except Exception as exc:  # many solutions cannot be captured; that is a fact to report, not a failure
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        torch.cuda.synchronize()
        ok = torch.tensor([0 if error else 1], dtype=torch.int32, device=self.r.device)
        _all_reduce(ok, op=dist.ReduceOp.MIN)
        if int(ok.item()) == 0:
            return {"available": False, "reason": error or "another rank could not capture"}
        fns = {name: (lambda g=g, name=name: (g.replay(), outputs[name])[1]) for name, g in graphs.items()}
        measured = self._measure(fns, buffers, self.iterations, record=True)
        measured["available"] = True
        return measured
