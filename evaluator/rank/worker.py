"""One sandboxed rank: ``main([_, RANK, COMMAND_FD, REPORT_FD, TIMER_FD, FEED_FD])``, called in a process the
sandbox's spawner forked (evaluator/rank/spawn.py); ``python -m evaluator.rank.worker ...`` runs it on its own.

Before the solution is loaded: the process group (every communicator the evaluation itself uses), the device, a
warm-up of the runtime, the compiled timer (which sends its key to the host), and references to everything the
runtime calls later. Then, on the host's commands: load the solution; call it on inputs read from the exchange
folder and write its outputs, and the inputs as they were after the call, back there; stage and time the
iterations of the timing phase (their inputs from the feed slot, a descriptor only this rank was given; their
outputs to this rank's output slot in the exchange folder). Reports go to the host as JSON lines; they are claims
the judge checks, never verdicts."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import sys
import threading
import time as _time
import traceback
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.rank.calls import CallCounter
from evaluator.timer.protocol import TimedLoop

IO = Path(os.environ.get("ARENA_IO", "/io"))
MULTICAST_VARS = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
_Tensor = torch.Tensor
_libc_getenv = ctypes.CDLL(None).getenv
_libc_getenv.restype = ctypes.c_char_p
_libc_getenv.argtypes = [ctypes.c_char_p]
_environ = os.environ
_send = wire.send
_load = wire.load_tensors
_save_pair = wire.save_call
wire.bind_torch()
_synchronize = torch.cuda.synchronize
_clone = torch._C.TensorBase.clone
_to = torch._C.TensorBase.to
_threads = threading.enumerate
_now = _time.perf_counter
_main_thread = threading.main_thread()


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


_RESULT_TUPLES = wire.result_tuple_types()
_outputs_of = wire.outputs_of


def _as_list(out: Any) -> list[Any]:
    return _outputs_of(out, _RESULT_TUPLES)


class Worker:
    def __init__(self, rank: int, report_fd: int, timer_fd: int, feed_fd: int) -> None:
        self.rank = rank
        self.fd = report_fd
        self.config = json.loads((IO / "config.json").read_text())
        self.world_size: int = self.config["world_size"]
        self.io = IO / f"r{rank}"
        self.device = torch.device("cpu")
        self.solution: Callable[..., Any] | None = None
        self.buffers: tuple | None = None
        self.staged: tuple | None = None
        self.multicast = {k: _libc_getenv(k.encode()) for k in MULTICAST_VARS}
        self.boot(timer_fd, feed_fd)
        self.send("booted", pid=os.getpid(), environment=self.environment(), boot_steps=self.boot_steps)

    def send(self, kind: str, **payload: Any) -> None:
        _send(self.fd, kind, rank=self.rank, **payload)

    def boot(self, timer_fd: int, feed_fd: int) -> None:
        cfg = self.config
        init = "file:///tmp/arena-store"
        t0 = _now()
        self.boot_steps: dict[str, float] = {}
        try:
            if cfg["device"] == "cuda":
                self.device = torch.device("cuda", self.rank)
                torch.cuda.set_device(self.device)
                dist.init_process_group(cfg["backend"], init_method=init, rank=self.rank,
                                        world_size=self.world_size, device_id=self.device)
                if cfg.get("symm_mem_backend"):
                    # The solution declared a backend that needs it (docs/backends/nvshmem.md): set before any
                    # symmetric-memory allocation, i.e. before the solution's first line. NVLS stays off.
                    import torch.distributed._symmetric_memory as symm_mem

                    symm_mem.set_backend(cfg["symm_mem_backend"])
            else:
                torch.set_num_threads(1)
                dist.init_process_group(cfg["backend"], init_method=init, rank=self.rank,
                                        world_size=self.world_size)
            self.group = dist.group.WORLD
            self.boot_steps["process_group_s"] = round(_now() - t0, 3)
            # Warm the runtime so the threads it starts for itself exist before the solution does.
            probe = torch.ones(8, device=self.device)
            dist.all_reduce(probe)
            (probe @ probe).item()
            if cfg.get("symm_mem_backend"):
                # NVSHMEM initialises at the first symmetric allocation and starts its proxy thread then: allocate
                # once here, so that thread is the runtime's and not one the solution's first call left running.
                # Kept for the process's life: freeing symmetric memory is collective.
                import torch.distributed._symmetric_memory as symm_mem

                self.symm_mem_warm = symm_mem.empty(1, dtype=torch.int64, device=self.device)
                torch.cuda.synchronize(self.device)
            self.boot_steps["runtime_warmed_s"] = round(_now() - t0, 3)
            timer = compiled_timer.load(cfg["timer"])
            stream = torch.cuda.current_stream(self.device).cuda_stream if self.device.type == "cuda" else -1
            timer.open(timer_fd, stream)
            self.loop = TimedLoop(timer, self.group, self.device)
            # Bound now: a solution that rebinds TimedLoop.measure afterwards (to run its call before the timer
            # starts) changes nothing here. What it could still reach in this process, the host's clock bounds.
            self.measure = self.loop.measure
            pinned = self.device.type == "cuda"
            if pinned:
                wire.bind_cuda()
            # What runs between the timer's stop and the outputs being in the slot, with its names bound now.
            self.post_call = wire.seal_post_call()
            self.feed = wire.Slot(feed_fd, writable=False, pinned=pinned, name="the feed slot")
            self.out = wire.Slot.open(self.io / wire.OUT_SLOT, writable=True, pinned=pinned)
        except Exception as exc:
            self.send("error", phase="setup", category="infra", message=_one_line(exc),
                      traceback=traceback.format_exc(limit=8))
            raise SystemExit(5)
        self.counter = CallCounter()
        self.boot_steps["ready_s"] = round(_now() - t0, 3)

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__,
                               "backend": self.config["backend"], "hostname": os.uname().nodename,
                               "symm_mem_backend": self.config.get("symm_mem_backend")}
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env.update({"gpu": props.name, "gpu_count": torch.cuda.device_count(), "cuda": torch.version.cuda,
                        "nccl": ".".join(map(str, torch.cuda.nccl.version())), "sm_count": props.multi_processor_count,
                        "multicast_off": {k: (v or b"").decode() for k, v in self.multicast.items()}})
        return env

    # -- commands -----------------------------------------------------------------------------------------
    def load_solution(self, path: str) -> None:
        try:
            spec = importlib.util.spec_from_file_location("arena_solution", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules["arena_solution"] = module
            with self.counter.active():
                spec.loader.exec_module(module)
            solve = getattr(module, "solution", None)
            if not callable(solve):
                raise AttributeError("the solution file defines no callable `solution`")
        except BaseException as exc:
            self.send("error", phase="setup", category="compile", message=_one_line(exc),
                      traceback=traceback.format_exc(limit=8))
            raise SystemExit(3)
        self.solution = solve
        self.send("loaded", **self.after_call())

    def after_call(self) -> dict[str, Any]:
        changed = [k for k, v in self.multicast.items() if _libc_getenv(k.encode()) != v or
                   (v is not None and _environ.get(k) != v.decode())]
        return {"multicast_changed": changed, "calls": self.counter.take(), "py_threads": _python_threads()}

    def _device_inputs(self, values: list[Any], copy: bool) -> tuple:
        return tuple(_to(v, self.device, copy=copy) if type(v) is _Tensor else v for v in values)

    def call(self, name: str, phase: str) -> None:
        inputs = self._device_inputs(_load(self.io / f"in.{name}.pt"), copy=False)
        given = tuple(_clone(v) if type(v) is _Tensor else v for v in inputs)
        assert self.solution is not None
        with self.counter.active():
            out = self.solution(*given)
        if self.device.type == "cuda":
            _synchronize(self.device)
        outputs = _as_list(out)
        _save_pair(self.io / f"out.{name}.pt", outputs, list(given))
        self.send("called", name=name, phase=phase, devices=[str(o.device) if type(o) is _Tensor else None
                                                             for o in outputs],
                  aliases=_aliases(outputs, given), subclasses=_subclasses(outputs), **self.after_call())

    def stage(self, i: int) -> None:
        t0 = _now()
        # Views of the feed slot, which the judge writes again next iteration: copied even on the CPU.
        self.staged = self._device_inputs(self.feed.read(), copy=True)
        if self.buffers is None or any(type(b) is _Tensor and (b.shape != s.shape or b.dtype != s.dtype)
                                       for b, s in zip(self.buffers, self.staged)):
            self.buffers = tuple(_clone(v) if type(v) is _Tensor else v for v in self.staged)
        if self.device.type == "cuda":
            _synchronize(self.device)
        self.send("staged", i=i, steps_us={"stage": (_now() - t0) * 1e6})

    def time(self, i: int, record: bool) -> None:
        assert self.solution is not None and self.buffers is not None and self.staged is not None
        solve, buffers = self.solution, self.buffers
        # Everything used between the call's return and the outputs being in the slot, in locals taken before the
        # call: no name the solution can rebind (a module's, a class's, a builtin) is looked up in between.
        now, counting, out_slot, result_tuples = _now, self.counter.flag, self.out, _RESULT_TUPLES
        outputs_of, call_values, write_slot = self.post_call
        t0 = now()
        counting[0] = True
        try:
            _, launch, out = self.measure(lambda: solve(*buffers), buffers, self.staged)
        finally:
            counting[0] = False
        t1 = now()
        outputs = outputs_of(out, result_tuples)
        # Copied on the call's stream, without waiting for the whole device: work the call left running on another
        # stream is not finished here, so its outputs come out wrong (rejected as wrong while timed).
        # Every iteration, warm-up included (as the baseline does): the slot has its size by the first recorded one.
        nbytes = write_slot(out_slot, call_values(outputs, []))
        self.loop.outputs_written()
        self.staged = None
        t2 = _now()
        self.send("timed", i=i, launch_us=launch, nbytes=nbytes if record else None,
                  devices=[str(o.device) if type(o) is _Tensor else None for o in outputs],
                  aliases=_aliases(outputs, buffers), subclasses=_subclasses(outputs),
                  steps_us={"measure": (t1 - t0) * 1e6, "save": (t2 - t1) * 1e6}, **self.after_call())

    def run(self, commands: Any) -> None:
        for line in commands:
            cmd = json.loads(line)
            op = cmd["op"]
            try:
                if op == "load":
                    self.load_solution(cmd["path"])
                elif op == "call":
                    self.call(cmd["name"], cmd["phase"])
                elif op == "stage":
                    self.stage(cmd["i"])
                elif op == "time":
                    self.time(cmd["i"], cmd["record"])
                elif op == "spin":
                    self.loop.adapt_spin(cmd["launch_us"])
                    self.send("spun")
                elif op == "exit":
                    return
            except SystemExit:
                raise
            except BaseException as exc:
                self.send("error", phase=cmd.get("phase", op), category="runtime", message=_one_line(exc),
                          traceback=traceback.format_exc(limit=12)[-6000:])
                raise SystemExit(2)


def _quiet_progress_bars() -> None:
    """tqdm starts a monitor thread, which never ends, the first time any progress bar is made, even a disabled one
    (Inductor makes one for every compile): that would be a thread the solution's call left running. Its
    monitor is switched off before the solution loads."""
    try:
        import tqdm
    except ImportError:
        return
    tqdm.tqdm.monitor_interval = 0


_quiet_progress_bars()  # here, so the sandbox's spawner does it once for every rank it forks


def _python_threads() -> dict[str, str]:
    """Python's own account of the threads still alive besides the main one (native id -> name and target), so a
    refusal for a leftover thread can say which one it was. A claim, used only in the message: the rule itself is
    checked from /proc by the host."""
    out: dict[str, str] = {}
    for t in _threads():
        if t is _main_thread or len(out) >= 8:
            continue
        target = getattr(t, "_target", None)
        where = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}" if target else \
            f"{type(t).__module__}.{type(t).__qualname__}.run"
        out[str(t.native_id)] = f"Python thread {t.name!r} running {where}"[:200]
    return out


def _subclasses(outputs: list[Any]) -> list[str]:
    """Outputs that are tensors of a subclass (saved as None: a subclass can change how it compares)."""
    return [f"output {k} is a {type(o).__module__}.{type(o).__qualname__}" for k, o in enumerate(outputs)
            if isinstance(o, _Tensor) and type(o) is not _Tensor]


def _aliases(outputs: list[Any], inputs: tuple) -> list[str]:
    """Outputs that share memory with an input or with another output."""
    found = []
    spans = [(f"input {k}", v) for k, v in enumerate(inputs) if type(v) is _Tensor and v.numel()]
    for k, out in enumerate(outputs):
        if type(out) is not _Tensor or not out.numel():
            continue
        for label, other in spans:
            if out.untyped_storage().data_ptr() == other.untyped_storage().data_ptr():
                found.append(f"output {k} shares memory with {label}")
        spans.append((f"output {k}", out))
    return found


def main(argv: list[str]) -> int:
    rank, cmd_fd, report_fd, timer_fd, feed_fd = (int(a) for a in argv[1:6])
    os.chdir(os.environ.get("HOME", "/tmp"))
    worker = Worker(rank, report_fd, timer_fd, feed_fd)
    send = worker.send
    try:
        with os.fdopen(cmd_fd, "r") as commands:
            worker.run(commands)
    except SystemExit as exc:
        return int(exc.code or 0)
    send("finished")
    return 0


if __name__ == "__main__":
    # os._exit: nothing the solution registered with atexit runs, and no rank lingers on a broken collective.
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
