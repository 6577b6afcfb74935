"""The steps around every timed call, the same for the judge's baseline and the sandboxed solution.

Before each call: (GPU) a spin kernel keeps the device busy, so the launches behind it are already queued when the
device reaches them and the figure is device time, not the CPU's launch path; this iteration's inputs are copied
into the buffers the call gets; (GPU) the L2 cache is flushed; the ranks are aligned by a one-element all-reduce on
a communicator created before any solution code was loaded (on CPU, a barrier). The compiled timer then records
the start, makes the call and records the end. Every function used here is bound when the loop is made, before a
solution is imported, so nothing a solution rebinds afterwards takes part."""

from __future__ import annotations

import gc
from typing import Any, Callable

import torch
import torch.distributed as dist

from evaluator.timer.spin import spin_us

L2_FLUSH_BYTES = 256 << 20  # several times the H200's 60 MB L2

_TB = torch._C.TensorBase
_copy = _TB.copy_
_zero = _TB.zero_
_Tensor = torch.Tensor
_sleep = getattr(torch.cuda, "_sleep", None)
_synchronize = torch.cuda.synchronize
_allreduce = dist.ProcessGroup.allreduce
_barrier = dist.ProcessGroup.barrier
_gc_enable = gc.enable


class TimedLoop:
    def __init__(self, timer: Any, group: dist.ProcessGroup, device: torch.device) -> None:
        self.timer = timer
        self.group = group
        self.device = device
        self.cuda = device.type == "cuda"
        self.one = torch.ones(1, device=device)
        self.spin_us = spin_us([], self.cuda)
        self.cycles_per_us = 0.0
        if self.cuda:
            self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)
            self.cycles_per_us = self._calibrate()

    def _calibrate(self) -> float:
        if _sleep is None:
            return 0.0
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _sleep(1000)
        start.record()
        _sleep(2_000_000)
        end.record()
        _synchronize()
        return 2_000_000 / (start.elapsed_time(end) * 1000.0)

    def align(self) -> None:
        if self.cuda:
            _allreduce(self.group, [self.one]).wait()
        else:
            _barrier(self.group).wait()

    def measure(self, call: Callable[[], Any], buffers: tuple, inputs: tuple) -> tuple[float, float, Any]:
        """Times one call on ``buffers`` refilled with ``inputs``; returns (µs, launch µs, the call's result)."""
        cuda, sleep, cycles, spin, flush, align = self.cuda, _sleep, self.cycles_per_us, self.spin_us, \
            getattr(self, "flush", None), self.align

        def prepare() -> None:
            if cuda and sleep is not None and cycles:
                sleep(int(spin * cycles))
            for dst, src in zip(buffers, inputs):
                if type(dst) is _Tensor:
                    _copy(dst, src)
            if cuda:
                _zero(flush)
            align()

        return self.timer.measure(prepare, call)

    @staticmethod
    def outputs_written() -> None:
        """The call's outputs are out of the process's hands: the collector the timer turned off at the call's
        return may run again (what a finalizer does from now on cannot change them)."""
        _gc_enable()

    def adapt_spin(self, launch_us: list[float]) -> None:
        self.spin_us = spin_us(launch_us, self.cuda)
