"""One rank of an evaluation: ``python -m evaluator.rank WORKDIR RANK CHANNEL_FD``.

Phases, each reported to the launcher before it starts so the launcher can hold it to its own time limit:
  setup        process group up, reference and solution imported, the solution's first call (its own set-up:
               buffers, rendezvous, compilation) on throw-away inputs — not timed;
  correctness  several trials of fresh random inputs from seeds the solution cannot predict; the reference and
               the solution each run on their own copy of the same inputs; outputs compared; inputs checked
               unmodified;
  timing       baseline and solution interleaved in one process; per-iteration times sent to the launcher, which
               takes the slowest rank per iteration; outputs from a sample of timed iterations re-checked.
Everything the harness relies on is imported and captured before the solution is, and checked unchanged after
every call into it (evaluator.guard: an audit hook that refuses what the rules forbid, and an integrity snapshot of
the modules, classes and operators the harness and the baseline use). The check after a call is always made through
a function bound before that call, so nothing the call replaced can answer for it.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

import problems.common
import problems.registry
from evaluator import guard
from evaluator.channel import RankChannel
from evaluator.correctness import as_tuple, clone_inputs, compare, inputs_unchanged
from evaluator.guard import Refusal
from evaluator.contract.profiles import MULTICAST_OFF
from evaluator.timing import Timer
from problems.registry import Problem, get, load_module

# Captured before any solution code is imported: a solution that replaces these afterwards neither changes how
# it is measured nor goes unnoticed (see _tampering).
_perf_counter = time.perf_counter
_all_reduce = dist.all_reduce
_barrier = dist.barrier
_compare = compare
_Tensor = torch.Tensor
_GUARDED: dict[str, tuple[Any, str, Any]] = {}


def _guard(owner: Any, attr: str, label: str) -> None:
    _GUARDED[label] = (owner, attr, getattr(owner, attr))


for _owner, _attr, _label in (
    (time, "perf_counter", "time.perf_counter"), (time, "time", "time.time"),
    (time, "monotonic", "time.monotonic"), (dist, "all_reduce", "torch.distributed.all_reduce"),
    (dist, "all_gather", "torch.distributed.all_gather"), (dist, "barrier", "torch.distributed.barrier"),
    (dist, "all_gather_into_tensor", "torch.distributed.all_gather_into_tensor"),
    (dist, "all_to_all_single", "torch.distributed.all_to_all_single"),
    (dist, "broadcast", "torch.distributed.broadcast"),
    (torch, "allclose", "torch.allclose"), (torch, "equal", "torch.equal"), (torch, "isfinite", "torch.isfinite"),
    (torch, "abs", "torch.abs"), (torch, "where", "torch.where"),
    (torch.Tensor, "__eq__", "torch.Tensor.__eq__"), (torch.Tensor, "__sub__", "torch.Tensor.__sub__"),
    (torch.Tensor, "any", "torch.Tensor.any"), (torch.Tensor, "clone", "torch.Tensor.clone"),
    (torch.Tensor, "copy_", "torch.Tensor.copy_"), (torch.Tensor, "to", "torch.Tensor.to"),
    (torch.cuda, "synchronize", "torch.cuda.synchronize"), (torch.cuda, "Event", "torch.cuda.Event"),
    (torch.cuda.Event, "elapsed_time", "torch.cuda.Event.elapsed_time"),
    (torch.cuda.Event, "record", "torch.cuda.Event.record"),
):
    _guard(_owner, _attr, _label)
_CUDA_SETTINGS = {
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
}
_SETTINGS_BEFORE = {name: read() for name, read in _CUDA_SETTINGS.items()}


class _Exit(SystemExit):
    """The harness ending the rank on purpose, after reporting why (a SystemExit the solution raises is refused)."""


def _tampering() -> str | None:
    for label, (owner, attr, original) in _GUARDED.items():
        if getattr(owner, attr, None) is not original:
            return f"the solution replaced {label}, which the harness uses to judge or time it"
    for name, read in _CUDA_SETTINGS.items():
        if read() != _SETTINGS_BEFORE[name]:
            return f"the solution changed the process-wide setting {name}, which would change the baseline too"
    return None


class Rank:
    def __init__(self, workdir: Path, rank: int, channel: RankChannel, secret: dict[str, Any]) -> None:
        self.workdir = workdir
        self.rank = rank
        self.channel = channel
        self.config = json.loads((workdir / "config.json").read_text())
        self.world_size: int = self.config["world_size"]
        self.seeds: list[int] = secret["seeds"]
        self.device_type: str = self.config["device"]
        self.problem: Problem = get(self.config["problem_id"])
        self.preset = self.problem.presets[self.config["preset"]]
        self.tol = self.problem.tolerance(self.preset.dtype)
        self.device = torch.device("cpu")
        self.reference: Callable[..., Any] | None = None
        self.solution: Callable[..., Any] | None = None
        self.phase = "setup"
        self.verify: Callable[[], str | None] = lambda: None
        self.solution_path = self.workdir / "solution" / self.config["solution_file"]

    # -- helpers ------------------------------------------------------------------------------------------
    def inputs(self, seed: int) -> tuple:
        return tuple(self.reference_module.make_inputs(self.rank, self.world_size, seed, self.device,
                                                       self.preset.dtype, **self.config["params"]))

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def begin(self, phase: str) -> None:
        self.phase = phase
        self.channel.send("phase", phase=phase)

    # -- phases -------------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.begin("setup")
        backend = self.config["backend"]
        # A file store in the private working directory: no port to race other evaluations for.
        init = f"file://{self.workdir / 'store'}"
        try:
            if self.device_type == "cuda":
                self.device = torch.device("cuda", self.rank)
                torch.cuda.set_device(self.device)
                dist.init_process_group(backend, init_method=init, rank=self.rank, world_size=self.world_size,
                                        device_id=self.device)
            else:
                torch.set_num_threads(max(1, self.config.get("threads_per_rank", 1)))
                dist.init_process_group(backend, init_method=init, rank=self.rank, world_size=self.world_size)
        except Exception as exc:  # before any solution code ran: the host's fault, not the solution's
            self.channel.send("error", phase="setup", category="infra", message=_one_line(exc),
                              traceback=traceback.format_exc(limit=8))
            raise _Exit(5)
        self.reference_module = self.problem.load_reference()
        self.reference = self.reference_module.solution
        self.channel.send("environment", **self.environment())
        verify = self.arm()
        try:
            module = load_module(self.solution_path, "arena_solution")
            solve = getattr(module, "solution", None)
            if not callable(solve):
                raise AttributeError("the solution file defines no callable `solution`")
        except Exception as exc:  # anything at import is the solution's compile step failing
            problem = verify()  # unless it failed because the sandbox refused something
            if problem:
                raise Refusal(problem) from exc
            self.channel.send("error", phase="setup", category="compile", message=_one_line(exc),
                              traceback=traceback.format_exc(limit=8))
            raise _Exit(3)
        problem = verify()
        if problem:
            raise Refusal(problem)
        self.solution = solve
        # The first call does the solution's own set-up; its inputs come from a seed used nowhere else. Every input
        # the solution is given stays alive until the correctness trials end, so no call sees memory an earlier
        # call saw: a result cached by pointer never hits here, and fails under the timing phase's refilled buffers.
        warm = clone_inputs(self.inputs(self.seeds[0]))
        self.kept = [warm]
        as_tuple(solve(*warm))
        self.sync()
        problem = verify()
        if problem:
            raise Refusal(problem)
        self.channel.send("phase_done", phase="setup")

    def arm(self) -> Callable[[], str | None]:
        """Installs the audit hook and takes the integrity snapshot, just before the solution is imported; returns
        the check to run after every call into the solution."""
        sandbox = self.config.get("sandbox") or {}
        policy = guard.Policy.from_config(str(self.workdir), sandbox, MULTICAST_OFF)
        here = sys.modules[__name__]
        strict = {"evaluator.rank": here, "evaluator.guard": guard,
                  "evaluator.correctness": sys.modules["evaluator.correctness"],
                  "evaluator.timing": sys.modules["evaluator.timing"],
                  "evaluator.channel": sys.modules["evaluator.channel"],
                  "problems.common": problems.common, f"the reference of {self.problem.id}": self.reference_module}
        loose = {"builtins": sys.modules["builtins"], "time": time, "os": os, "random": random, "json": json,
                 "torch": torch, "torch.distributed": dist,
                 "torch.distributed.distributed_c10d": sys.modules["torch.distributed.distributed_c10d"],
                 "torch.cuda": torch.cuda, "torch.nn.functional": torch.nn.functional}
        for name, module in list(sys.modules.items()):  # the rest of the harness and the problems' helpers
            if name.split(".")[0] in ("evaluator", "problems") and module is not None and name not in strict:
                loose.setdefault(name, module)
        classes = {"torch.Tensor": torch.Tensor, "torch.cuda.Event": torch.cuda.Event,
                   "torch.cuda.Stream": torch.cuda.Stream, "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph,
                   "torch.distributed.ProcessGroup": dist.ProcessGroup, "random.Random": random.Random,
                   "json.JSONEncoder": json.JSONEncoder}
        check_integrity = guard.snapshot(strict, loose, classes, guard.existing_operators(guard.HARNESS_OPERATORS),
                                         protected_env={k: os.environ[k] for k in MULTICAST_OFF if k in os.environ},
                                         solution_files=[str(self.solution_path)])
        violations = guard.install(policy)
        tampering = _tampering

        def verify() -> str | None:
            changed = check_integrity()
            refused = violations()
            if refused:
                return f"the sandbox refused: {refused[0]}"
            return changed or tampering()

        self.verify = verify
        self.channel.send("sandbox", audit_hook=True, integrity_snapshot=True, uid=os.getuid(),
                          write_roots=list(policy.write_roots), limits=_limits())
        return verify

    def correctness(self) -> bool:
        self.begin("correctness")
        verify, solution, reference = self.verify, self.solution, self.reference
        all_ok = True
        for t, seed in enumerate(self.seeds[1:1 + self.config["trials"]]):
            inputs = self.inputs(seed)
            expected = reference(*clone_inputs(inputs))
            expected = clone_inputs(as_tuple(expected))
            _barrier()
            given = clone_inputs(inputs)
            self.kept.append(given)
            actual = solution(*given)
            self.sync()
            problem = verify()
            if problem:
                raise Refusal(problem)
            mismatch = _compare(actual, expected, self.tol.atol, self.tol.rtol)
            if mismatch and mismatch.gaming:
                raise Refusal(f"trial {t}: {mismatch.message}")
            changed = inputs_unchanged(inputs, given)
            if changed:
                raise Refusal(f"trial {t}: {changed}")
            error = mismatch.message if mismatch else None
            self.channel.send("trial", trial=t, ok=error is None, error=error,
                              max_abs_error=mismatch.max_abs_error if mismatch else None)
            all_ok = all_ok and error is None
            del inputs, expected, given, actual
        self.channel.send("phase_done", phase="correctness")
        return all_ok

    def timing(self) -> None:
        self.begin("timing")
        timer = Timer(self, seeds=self.seeds[1 + self.config["trials"]:], verify=self.verify)
        self.kept = []  # only now: the timer's buffers were allocated while they were alive
        report = timer.run()
        self.check_tampering()
        self.channel.send("timing", **report)
        self.channel.send("phase_done", phase="timing")

    def check_tampering(self) -> None:
        problem = self.verify()
        if problem:
            raise Refusal(problem)

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "python": sys.version.split()[0], "torch": torch.__version__, "backend": self.config["backend"],
            "hostname": os.uname().nodename,
        }
        if self.device_type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env.update({"gpu": props.name, "gpu_count": torch.cuda.device_count(), "cuda": torch.version.cuda,
                        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                        "sm_count": props.multi_processor_count,
                        "multicast_off": {k: os.environ.get(k) for k in
                                          ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                           "NVSHMEM_DISABLE_NVLS")}})
        return env

    def run(self) -> None:
        self.setup()
        ok = self.correctness()
        # Every rank must agree before timing starts, or one rank would wait in a collective forever.
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=self.device)
        _all_reduce(flag, op=dist.ReduceOp.MIN)
        if int(flag.item()) == 1 and self.config["measure_timing"]:
            self.timing()
        self.channel.send("done")


def _limits() -> dict[str, Any]:
    import resource

    out = {}
    for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
                 "RLIMIT_CORE"):
        soft, _ = resource.getrlimit(getattr(resource, name))
        out[name] = None if soft == resource.RLIM_INFINITY else soft
    return out


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def main(argv: list[str]) -> int:
    workdir, rank, fd = Path(argv[1]), int(argv[2]), int(argv[3])
    secret = json.loads(sys.stdin.readline())
    sys.stdin.close()
    channel = RankChannel(fd, bytes.fromhex(secret.pop("key")), rank)
    os.chdir(workdir / "solution")
    runner = Rank(workdir, rank, channel, secret)
    send = channel.send  # bound before the solution exists, like everything main relies on
    try:
        runner.run()
    except _Exit as exc:
        return int(exc.code or 0)
    except Refusal as exc:
        send("error", phase=runner.phase, category="rejected", message=str(exc), traceback="")
        return 4
    except SystemExit as exc:
        send("error", phase=runner.phase, category="rejected", traceback="",
             message=f"the solution raised SystemExit({exc.code!r}) (sys.exit) in the {runner.phase} phase: a solution "
                     f"must return its outputs, never end the process")
        return 4
    except BaseException as exc:
        refused = runner.verify()  # an exception the sandbox caused says less than the refusal itself
        if refused:
            send("error", phase=runner.phase, category="rejected", message=refused, traceback="")
            return 4
        send("error", phase=runner.phase, category="runtime", message=_one_line(exc),
             traceback=traceback.format_exc(limit=12))
        return 2
    try:
        dist.destroy_process_group()
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    # os._exit: nothing the solution registered with atexit runs, and no rank lingers on a broken collective.
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
