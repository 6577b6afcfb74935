"""Every thread of a one-rank CUDA + NCCL + gloo process, walked by its code's call-frame information
(evaluator/host/unwind.py): whether each walk reaches the thread's first frame, why not, and what the host's thread
check judges each thread to run. Writes OUTDIR/unwind_probe.json.

  python benchmarks/unwind_gpu.py OUTDIR

Before the process group starts, eight Python threads run and end, so the library threads started after them get
their stacks, unwiped; one more Python thread, renamed like gloo's, stays."""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402
from evaluator.host import unwind, watch  # noqa: E402

CHILD = r"""
import os, threading, time, ctypes, torch, torch.distributed as dist
os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555"})
def deep(n): return 0 if n == 0 else sum(map(deep, [n - 1]))
for _ in range(8):
    t = threading.Thread(target=deep, args=(30,)); t.start(); t.join()
print(" ".join(os.listdir("/proc/self/task")), flush=True)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(1 << 20, device="cuda"); dist.all_reduce(x); torch.cuda.synchronize()
g = dist.new_group([0], backend="gloo"); y = torch.ones(4); dist.all_reduce(y, group=g)
ev = threading.Event()
def named():
    ctypes.CDLL(None).prctl(15, b"gloo_fake", 0, 0, 0); ev.set(); time.sleep(120)
threading.Thread(target=named, daemon=True).start(); ev.wait()
print("ready", flush=True); time.sleep(120)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    args = parser.parse_args()
    env = dict(os.environ, NCCL_SET_THREAD_NAME="1", **MULTICAST_OFF)
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env)
    before = {int(t) for t in proc.stdout.readline().split()}
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGSTOP)
    while not watch.stopped(proc.pid):
        time.sleep(0.01)
    rows = []
    for tid, name in sorted(watch.threads(proc.pid).items()):
        try:
            f = open(f"/proc/{proc.pid}/task/{tid}/syscall").read().split()
            sp, pc = int(f[-2], 16), int(f[-1], 16)
            code, end = watch._code_mappings(proc.pid, sp)
            fd = os.open(f"/proc/{proc.pid}/mem", os.O_RDONLY)
            data = os.pread(fd, end - sp, sp)
            os.close(fd)
            t0 = time.perf_counter()
            why = []
            frames = unwind.live_frames(proc.pid, sp, pc, data, code, why)
            ms = (time.perf_counter() - t0) * 1e3
            libs = []
            for v in frames.addresses:
                m = next((m for m in code if m.start <= v < m.end), None)
                libs.append(os.path.basename(m.path) if m else hex(v))
            rows.append(
                {
                    "tid": tid,
                    "name": name,
                    "new": tid not in before,
                    "walked": frames.complete,
                    "frames": len(frames.addresses),
                    "words_above_last_frame": max(0, (end - frames.every_word_from) // 8) if frames.complete else None,
                    "ms": round(ms, 3),
                    "libs": libs[:12],
                    "judged": watch.what_runs(proc.pid, tid),
                    "why": why,
                }
            )
        except Exception as e:
            rows.append({"tid": tid, "name": name, "error": repr(e)})
    proc.kill()
    Path(args.outdir).mkdir(parents=True, exist_ok=True)
    Path(args.outdir, "unwind_probe.json").write_text(json.dumps(rows, indent=1))
    walked = sum(1 for r in rows if r.get("walked"))
    print(f"{walked} of {len(rows)} threads walked to their first frame")
    for r in rows:
        print(r["name"], "walked" if r.get("walked") else "not walked", r.get("judged"), r.get("why") or r.get("error"))


if __name__ == "__main__":
    main()
