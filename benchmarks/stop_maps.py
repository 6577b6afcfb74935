"""What one reading of a rank's /proc/PID/maps costs the host at a stop, by how many mappings the rank holds: the
feeds' check and the threads' check share one reading a stop (evaluator/host/session.py ``_stop_maps``), where each
read its own before. Writes OUTDIR/stop_maps.json.

  python benchmarks/stop_maps.py OUTDIR [--mappings 1000 20000 65000] [--readings 20]

Each child maps one region and splits it into about as many mappings as asked (every other page made read-only),
within the kernel's vm.max_map_count."""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.host import watch  # noqa: E402

CHILD = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
pieces = int(sys.argv[1])
base = libc.mmap(None, (pieces + 1) * 4096, 3, 0x22, -1, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
for i in range(0, pieces, 2):
    libc.mprotect(base + i * 4096, 4096, 1)
print("ready", flush=True)
time.sleep(600)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--mappings", type=int, nargs="+", default=[1000, 20000, 65000])
    parser.add_argument("--readings", type=int, default=20)
    args = parser.parse_args()
    rows = []
    for pieces in args.mappings:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(pieces)], stdout=subprocess.PIPE)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
            lines = watch.read_maps_file(child.pid).count(b"\n")
            times = []
            for _ in range(args.readings):
                began = time.perf_counter()
                watch.read_maps_file(child.pid)
                times.append((time.perf_counter() - began) * 1e3)
            rows.append({"mappings": lines, "reading_ms_median": round(statistics.median(times), 2)})
        finally:
            child.kill()
            child.wait()
        print(rows[-1], flush=True)
    args.outdir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/stop_maps.py OUTDIR --mappings " + " ".join(map(str, args.mappings))
    (args.outdir / "stop_maps.json").write_text(
        json.dumps({"date": time.strftime("%Y-%m-%d"), "command": command, "rows": rows}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
