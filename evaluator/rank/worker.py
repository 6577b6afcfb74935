"""One sandboxed rank: ``main([_, RANK, COMMAND_FD, REPORT_FD, TIMER_FD, FEED_FD, LINK_FD])``, called in a process the
sandbox's spawner forked (evaluator/rank/spawn.py); ``python -m evaluator.rank.worker ...`` runs it on its own.

Before the solution is loaded: the process group (every communicator the evaluation itself uses), the device, a
warm-up of the runtime, the compiled engine (which sends the timer's key to the host and binds what it uses later)
and, on GPU hosts, the device feed that the judge's rank of the same number sends over LINK_FD. Then, on the host's
"load", the solution is imported and, from there to the end, the engine serves the host's commands itself
(evaluator/timer/_engine.cpp): every call's inputs from the feed slot (a descriptor only this rank was given) or the
device feed, into storage allocated for that call; its outputs into this rank's output slot in the exchange folder.
No Python of the evaluator's runs after the load but to report a failure. Reports go to the host as JSON lines; they
are claims the judge checks, never verdicts."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import socket
import sys
import time as _time
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from evaluator import timer as compiled_timer
from evaluator import wire
from evaluator.rank import COMPILE_ERROR_EXIT, INFRA_ERROR_EXIT, RUNTIME_ERROR_EXIT
from evaluator.timer.protocol import MULTICAST_VARS, open_engine
from evaluator.timer.spin import spin_us

IO = Path(os.environ.get("ARENA_IO", "/io"))
_libc_getenv = ctypes.CDLL(None).getenv
_libc_getenv.restype = ctypes.c_char_p
_libc_getenv.argtypes = [ctypes.c_char_p]
_now = _time.perf_counter
_PHASES = {compiled_timer.CALL: "setup", compiled_timer.TIME: "timing", compiled_timer.SPIN: "timing"}


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


class Worker:
    def __init__(self, rank: int, report_fd: int, timer_fd: int, feed_fd: int, link_fd: int) -> None:
        self.rank = rank
        self.fd = report_fd
        self.feed_fd = feed_fd
        self.config = json.loads((IO / "config.json").read_text())
        self.world_size: int = self.config["world_size"]
        self.io = IO / f"r{rank}"
        self.device = torch.device("cpu")
        self.multicast = {k: _libc_getenv(k.encode()) for k in MULTICAST_VARS}
        self.sealed = False  # whether the kernel sealed the engine (run)
        self.boot(timer_fd, link_fd)
        self.send("booted", pid=os.getpid(), environment=self.environment(), boot_steps=self.boot_steps)

    def send(self, kind: str, **payload: Any) -> None:
        wire.send(self.fd, kind, rank=self.rank, **payload)

    def boot(self, timer_fd: int, link_fd: int) -> None:
        cfg = self.config
        init = "file:///tmp/arena-store"
        t0 = _now()
        self.boot_steps: dict[str, float] = {}
        try:
            if cfg["device"] == "cuda":
                self.device = torch.device("cuda", self.rank)
                torch.cuda.set_device(self.device)
                dist.init_process_group(
                    cfg["backend"], init_method=init, rank=self.rank, world_size=self.world_size, device_id=self.device
                )
                if cfg.get("symm_mem_backend"):
                    # The solution declared a backend that needs it (docs/backends/nvshmem.md): set before any
                    # symmetric-memory allocation, i.e. before the solution's first line. NVLS stays off.
                    import torch.distributed._symmetric_memory as symm_mem

                    symm_mem.set_backend(cfg["symm_mem_backend"])
            else:
                torch.set_num_threads(1)
                dist.init_process_group(cfg["backend"], init_method=init, rank=self.rank, world_size=self.world_size)
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
            self.engine = compiled_timer.load(cfg["timer"])
            open_engine(self.engine, timer_fd, dist.group.WORLD, self.device)
            self.engine.hold_report_channel(self.fd)
            self.engine.set_spin(spin_us([], self.device.type == "cuda"))  # the host sets it after the warm-up
            # When the judge's rank sent its device feed (the rank waits for it): where a slow set-up's time went.
            self.device_feed_bytes = self.take_device_feed(link_fd)
            self.boot_steps["device_feed_s"] = round(_now() - t0, 3)
            # Bound now, before any solution code: what serves the rank from the load on.
            self.serve = self.engine.serve
            self.current = self.engine.current
            # The host made the slot, this rank's own, in a folder where nothing in the sandbox can create a file
            # (evaluator/host/evaluate.py, _prepare_workdir): opened as it is, never made here.
            try:
                self.out_fd = os.open(self.io / wire.OUT_SLOT, os.O_RDWR | os.O_NOFOLLOW)
            except FileNotFoundError:
                raise RuntimeError(f"the host made no output slot at {self.io / wire.OUT_SLOT}") from None
        except Exception as exc:
            self.send(
                "error",
                phase="setup",
                category="infra",
                message=_one_line(exc),
                traceback=traceback.format_exc(limit=8),
            )
            raise SystemExit(INFRA_ERROR_EXIT) from None
        self.boot_steps["ready_s"] = round(_now() - t0, 3)

    def take_device_feed(self, link_fd: int) -> int:
        """The judge's rank's one message on the link: on GPU hosts, descriptors of the device memory it writes this
        rank's inputs into, of the device memory this rank writes its outputs to where it made one, and last of the
        page of host memory it releases this rank's gates through (read-only here), which the engine maps (before the
        solution loads, so the host's record of the engine's fixed tables holds them); otherwise none, and the frames
        go through the slots alone. Waits for the judge, which sends them once it made its inputs; a judge that ended
        first closed the link. Returns the input feed's size."""
        with socket.socket(fileno=link_fd) as link:
            message, fds, _, _ = socket.recv_fds(link, 64, 3)
        try:
            sizes = [int(n) for n in (message or b"0").split()[:2]]
            if len(fds) < 2 or len(sizes) != len(fds) - 1 or self.device.type != "cuda" or sizes[0] <= 0:
                return 0
            self.engine.open_device_feed(fds[0], sizes[0])
            self.engine.open_gate(fds[-1])
            if len(sizes) > 1 and sizes[1] > 0:
                self.engine.open_device_feed(fds[1], sizes[1], True)
            self.boot_steps["device_out_bytes"] = sizes[1] if len(sizes) > 1 else 0
            return sizes[0]
        finally:
            for fd in fds:
                os.close(fd)

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "backend": self.config["backend"],
            "hostname": os.uname().nodename,
            "symm_mem_backend": self.config.get("symm_mem_backend"),
        }
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env.update(
                {
                    "gpu": props.name,
                    "gpu_count": torch.cuda.device_count(),
                    "cuda": torch.version.cuda,
                    "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                    "sm_count": props.multi_processor_count,
                    "multicast_off": {k: (v or b"").decode() for k, v in self.multicast.items()},
                }
            )
        return env

    def load_solution(self, path: str) -> Any:
        try:
            spec = importlib.util.spec_from_file_location("arena_solution", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules["arena_solution"] = module
            spec.loader.exec_module(module)
            solve = getattr(module, "solution", None)
            if not callable(solve):
                raise AttributeError("the solution file defines no callable `solution`")
        except BaseException as exc:
            self.send(
                "error",
                phase="setup",
                category="compile",
                message=_one_line(exc),
                traceback=traceback.format_exc(limit=8),
            )
            raise SystemExit(COMPILE_ERROR_EXIT) from None
        changed = [k for k, v in self.multicast.items() if _libc_getenv(k.encode()) != v]
        self.send("loaded", multicast_changed=changed, sealed=self.sealed)
        return solve

    def run(self, cmd_fd: int) -> None:
        """One JSON command, "load", then the engine's binary commands until the host's "exit"."""
        line = _read_line(cmd_fd)
        cmd = json.loads(line) if line else {"op": "exit"}
        if cmd.get("op") != "load":
            return
        serve, current = self.serve, self.current
        try:
            # From here on no thread or child of this rank may re-point its channels (_engine.cpp lock_channels).
            self.engine.lock_channels([cmd_fd, self.feed_fd, self.out_fd], command_fd=cmd_fd)
            # The last step before any solution code: the engine's tables and every loaded object's code become
            # read-only for good (_engine.cpp seal_engine), so nothing the solution does can hook them for a moment.
            self.sealed = bool(self.engine.seal())
        except Exception as exc:
            self.send("error", phase="setup", category="infra", message=_one_line(exc))
            raise SystemExit(INFRA_ERROR_EXIT) from None
        solve = self.load_solution(cmd["path"])
        try:
            serve(cmd_fd, self.fd, self.rank, solve, self.feed_fd, self.out_fd)
        except SystemExit:
            raise  # the solution ended its process: the host says so from the exit status
        except BaseException as exc:
            op, _, flags = current()
            phase = (
                "correctness"
                if op == compiled_timer.CALL and flags & compiled_timer.TRIAL_FLAG
                else _PHASES.get(op, "setup")
            )
            self.send(
                "error",
                phase=phase,
                category="runtime",
                message=_one_line(exc),
                traceback=traceback.format_exc(limit=12)[-6000:],
            )
            raise SystemExit(RUNTIME_ERROR_EXIT) from None


def _read_line(fd: int) -> bytes:
    """One line from ``fd``, a byte at a time: what follows it on the pipe is the engine's to read."""
    out = bytearray()
    while len(out) < wire.MAX_LINE:
        b = os.read(fd, 1)
        if not b or b == b"\n":
            break
        out += b
    return bytes(out)


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


def main(argv: list[str]) -> int:
    rank, cmd_fd, report_fd, timer_fd, feed_fd, link_fd = (int(a) for a in argv[1:7])
    os.chdir(os.environ.get("HOME", "/tmp"))
    worker = Worker(rank, report_fd, timer_fd, feed_fd, link_fd)
    send = worker.send
    try:
        worker.run(cmd_fd)
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
