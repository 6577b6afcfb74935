"""Every GPU backend inside the sandbox under its limits (the system-call filter, the pids cgroup): writes a report.

  python benchmarks/sandbox_limits_gpu.py OUTFILE [main] [nvshmem] [ipc]

As root on a GPU host, with bubblewrap. Each probe runs as the sandbox's uid in a sandbox made exactly as an
evaluation's solution sandbox is (evaluator.host.sandbox.command, environment and limits for "cuda"): CUDA, NCCL at one
rank, a Triton kernel, a load_inline CUDA build, torch.compile (Inductor), PyTorch symmetric memory (CUDA backend,
one-rank rendezvous and one-shot all-reduce), NVSHMEM allocation, CUDA IPC of a tensor to a spawned process; and the
filter's refusals (a user namespace, unshare -U). The host reads the sandbox's pids cgroup afterwards: its peak of
processes and threads, and whether any fork was refused. NVLink multicast stays off (the sandbox's environment)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator.host import cgroups, sandbox, seccomp  # noqa: E402

PROBE = r"""
import ctypes, os, subprocess, sys, time, traceback
if os.getuid() == 0:  # the first process; a spawned child runs this again as the sandbox's uid already
    os.setgroups([]); os.setgid(int(os.environ["ARENA_SANDBOX_GID"])); os.setuid(int(os.environ["ARENA_SANDBOX_UID"]))
os.makedirs(os.environ["HOME"], exist_ok=True)
import torch
import torch.distributed as dist

def step(name, fn):
    t = time.monotonic()
    try:
        detail = fn()
        print(f"OK   {name} ({time.monotonic() - t:.1f} s) {detail or ''}", flush=True)
    except BaseException as exc:
        print(f"FAIL {name} ({time.monotonic() - t:.1f} s): {type(exc).__name__}: {str(exc)[:400]}", flush=True)
        traceback.print_exc(limit=3)

def refused_userns():
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.unshare(0x10000000)
    assert rc == -1 and ctypes.get_errno() == 1, (rc, ctypes.get_errno())
    r = subprocess.run(["unshare", "-Ur", "id", "-u"], capture_output=True, text=True)
    assert r.returncode != 0, r.stdout
    return "unshare(CLONE_NEWUSER): EPERM; unshare -Ur: " + r.stderr.strip()[:80]

def cuda():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    return torch.cuda.get_device_name()

def nccl():
    dist.init_process_group("nccl", init_method="file:///tmp/store", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    t = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    return f"nccl {torch.cuda.nccl.version()} sum={t[0].item()}"

def symm():
    import torch.distributed._symmetric_memory as symm_mem
    t = symm_mem.empty(4096, device="cuda", dtype=torch.bfloat16).fill_(1)
    symm_mem.rendezvous(t, dist.group.WORLD.group_name)
    out = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", dist.group.WORLD.group_name)
    torch.cuda.synchronize()
    return f"one_shot_all_reduce={out[0].item()}"

def triton_kernel():
    import triton
    from kernels_probe import add
    x = torch.randn(10000, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x)
    add[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), BLOCK=1024)
    assert torch.allclose(o, x + y)
    return f"triton {triton.__version__}"

def inline():
    from torch.utils.cpp_extension import load_inline
    cuda_src = ("__global__ void k(float* x, int n){int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n) x[i]*=2;}\n"
                "torch::Tensor twice(torch::Tensor x){int n=x.numel(); k<<<(n+255)/256,256>>>(x.data_ptr<float>(), n);"
                " return x;}")
    mod = load_inline("arena_probe_twice", "torch::Tensor twice(torch::Tensor x);", cuda_sources=cuda_src,
                      functions=["twice"])
    x = torch.ones(1000, device="cuda")
    assert mod.twice(x).sum().item() == 2000
    return "built into " + os.environ["TORCH_EXTENSIONS_DIR"]

def compiled():
    f = torch.compile(lambda x: (x * 2).sin().sum())
    return f"value={f(torch.ones(4096, device='cuda')).item():.3f}"

def ipc():
    import torch.multiprocessing as mp
    from kernels_probe import ipc_child
    ctx = mp.get_context("spawn")
    q, back = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=ipc_child, args=(q, back))
    p.start()
    t = torch.full((1024,), 3.0, device="cuda")
    q.put(t)
    got = back.get(timeout=120)
    p.join(60)
    assert got == 3072.0, got
    return f"child summed {got}"

def threads():
    return "threads in this process: " + [l for l in open("/proc/self/status") if l.startswith("Threads")][0].split()[1]

if __name__ == "__main__":
    which = sys.argv[1]
    if which == "ipc":
        step("CUDA matmul", cuda)
        step("CUDA IPC to a spawned process", ipc)
    elif which == "main":
        for name, fn in [("filter refuses a user namespace", refused_userns), ("CUDA matmul", cuda),
                         ("NCCL all_reduce, 1 rank", nccl), ("symmetric memory (CUDA backend), 1 rank", symm),
                         ("Triton kernel", triton_kernel), ("load_inline CUDA build", inline),
                         ("torch.compile (Inductor)", compiled), ("CUDA IPC to a spawned process", ipc),
                         ("threads", threads)]:
            step(name, fn)
    else:
        def nvshmem():
            import torch.distributed._symmetric_memory as symm_mem
            symm_mem.set_backend("NVSHMEM")
            dist.init_process_group("nccl", init_method="file:///tmp/store2", rank=0, world_size=1,
                                    device_id=torch.device("cuda", 0))
            t = symm_mem.empty(4096, device="cuda", dtype=torch.float32).fill_(1)
            torch.cuda.synchronize()
            return f"allocated {t.numel()} floats through NVSHMEM"
        step("NVSHMEM allocation, 1 rank", nvshmem)
"""

KERNELS = r"""
import torch
import triton
import triton.language as tl


@triton.jit
def add(x, y, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


def ipc_child(q, back):
    t = q.get()
    back.put(float(t.sum().item()))
"""


def run(which: str, lines: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="arena-limits-gpu-") as tmp:
        t = Path(tmp)
        os.chmod(t, 0o755)
        for name in ("rt/evaluator", "sol", "io", "cache"):
            (t / name).mkdir(parents=True)
            os.chmod(t / name, 0o777)
        (t / "sol" / "probe.py").write_text(PROBE)
        (t / "sol" / "kernels_probe.py").write_text(KERNELS)
        for f in ("probe.py", "kernels_probe.py"):
            os.chmod(t / "sol" / f, 0o644)
        (t / "timer.so").write_bytes(b"")
        mounts = sandbox.Mounts(t / "rt", t / "timer.so", t / "sol", t / "io", t / "cache")
        env = sandbox.environment(dict(os.environ), "cuda")
        env["PYTHONPATH"] = "/solution"
        argv = sandbox.command(mounts, [sys.executable, "/solution/probe.py", which], env, "cuda", 8 << 30)
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=sandbox.limits("cuda")
        )
        out, _ = proc.communicate(timeout=480)
        lines.append(f"## sandbox run '{which}': exit {proc.returncode}, {time.monotonic() - started:.1f} s")
        lines += [line for line in out.splitlines() if line.startswith(("OK", "FAIL"))]
        fails = [line for line in out.splitlines() if not line.startswith(("OK", "FAIL"))]
        if proc.returncode or any(line.startswith("FAIL") for line in out.splitlines()):
            lines.append("output tail:")
            lines += ["    " + line for line in fails[-40:]]
        roots = [r for r in (cgroups.pids_root(), cgroups.memory_root()) if r is not None]
        for path in sorted({p for r in dict.fromkeys(roots) for p in cgroups.of(proc.pid, r)}):
            if (path / "pids.max").exists():
                peak = (path / "pids.peak").read_text().strip() if (path / "pids.peak").exists() else "?"
                lines.append(
                    f"pids cgroup {path}: cap {cgroups.cap(path)}, peak {peak}, forks refused {cgroups.refusals(path)}"
                )
            for name in ("memory.peak", "memory.max_usage_in_bytes"):
                if (path / name).exists():
                    lines.append(
                        f"memory cgroup {path}: cap {cgroups.memory_cap(path)} bytes, peak "
                        f"{int((path / name).read_text()) / 2**30:.2f} GiB, "
                        f"OOM kills {cgroups.oom_kills(path)}"
                    )


def main() -> int:
    outfile = Path(sys.argv[1])
    lines = [
        f"# sandbox limits on a GPU host, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"command: python benchmarks/sandbox_limits_gpu.py {outfile.name}",
        f"host: {platform.node()} {platform.machine()}, kernel {platform.release()}, "
        f"python {platform.python_version()}",
        f"bubblewrap: {subprocess.run(['bwrap', '--version'], capture_output=True, text=True).stdout.strip()}",
        f"probe('cuda'): {sandbox.probe('cuda')}",
        f"pids cgroup root: {cgroups.pids_root()} (mode {cgroups.mode()}), cap {sandbox.pids_max('cuda')}",
        f"memory cgroup root: {cgroups.memory_root()}, cap {sandbox.memory_max('cuda')} bytes",
        f"filter: {len(seccomp.program())} instructions for {seccomp.machine()}; refused: "
        f"{', '.join(n for n in seccomp.REFUSED if n in seccomp.SYSCALLS[seccomp.machine()])}; "
        f"clone with CLONE_NEW*: EPERM; clone3: ENOSYS",
    ]
    try:
        import torch

        lines.append(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {torch.cuda.get_device_name()}")
    except Exception as exc:  # noqa: BLE001
        lines.append(f"torch: {exc}")
    for which in sys.argv[2:] or ["main", "nvshmem"]:
        try:
            run(which, lines)
        except Exception as exc:  # noqa: BLE001 - the report says what broke
            lines.append(f"## sandbox run '{which}' broke: {type(exc).__name__}: {exc}")
        outfile.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
