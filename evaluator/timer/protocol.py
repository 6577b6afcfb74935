"""Opening the compiled engine, the same way in the judge (baseline) and the sandboxed ranks (solution).

Every call, timed or not, runs in the engine (evaluator/timer/_engine.cpp): its inputs read from the side's feed slot
into storage allocated for that call alone; before a timed call (GPU) a spin kernel keeps the device busy, so the
launches behind it are already queued when the device reaches it and the figure is device time, not the CPU's launch
path; the L2 cache is flushed; the ranks are aligned by a one-element all-reduce (on CPU, a barrier) on the process
group's backend, created before any solution code was loaded; then the start, the call, the stop, the outputs copied
into the side's output slot on the call's stream, the device synchronized. This module only calibrates the spin
kernel and hands the engine what it binds once: nothing here runs after a solution is loaded."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from evaluator import wire

MULTICAST_VARS = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


def _cycles_per_us() -> float:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return 0.0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sleep(1000)
    start.record()
    sleep(2_000_000)
    end.record()
    torch.cuda.synchronize()
    return 2_000_000 / (start.elapsed_time(end) * 1000.0)


def open_engine(engine: Any, timer_fd: int, group: dist.ProcessGroup, device: torch.device) -> None:
    """Opens ``engine`` (the loaded module) in this process: draws the timer's key and writes it to ``timer_fd``."""
    cuda = device.type == "cuda"
    stream = torch.cuda.current_stream(device).cuda_stream if cuda else -1
    sleep = getattr(torch._C, "_cuda_sleep", None) if cuda else None
    engine.open(
        timer_fd,
        stream,
        device.index if cuda else -1,
        group,
        sleep,
        _cycles_per_us() if cuda else 0.0,
        wire.result_tuple_types(),
        list(MULTICAST_VARS),
    )
