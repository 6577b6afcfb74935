"""What one step of the tensor exchange costs (evaluator/wire.py): tensor files and slots.

  python benchmarks/exchange_io.py OUTDIR [--sizes-mib 16,96] [--repeats 5]

The warm-up call and the correctness trials pass tensor files; every timed iteration passes its inputs from the
judge to the sandbox, and its outputs back, through slots (wire.Slot: files that last the evaluation, mapped once,
page-locked where there is a GPU). This times each step on the device the evaluation runs on (CUDA where there is
one): a file written from device tensors and read back onto the device; a slot written from the device and read
onto it by another mapping; the host's copy of a slot into the judge's. Median of the repeats, in milliseconds."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator import wire  # noqa: E402
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402
from evaluator.host.solution_call import copy_plain_file  # noqa: E402  (the host's copy of timed outputs)

os.environ.update(MULTICAST_OFF)

import torch  # noqa: E402


def _ms(fn, repeats: int, sync) -> float:
    times = []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return round(statistics.median(times), 2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--sizes-mib", default="16,96")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "command": "python benchmarks/exchange_io.py OUTDIR",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "repeats": args.repeats,
        "rows": [],
    }
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        folder = Path(tmp)
        for mib in (int(s) for s in args.sizes_mib.split(",")):
            x = torch.randn(mib << 19, dtype=torch.bfloat16, device=device)
            path = folder / "a.pt"
            # each lambda is timed at once; the defaults bind this size's tensor and files all the same
            row = {
                "mib": mib,
                "save_ms": _ms(lambda path=path, x=x: wire.save_tensors(path, [x]), args.repeats, sync),
                "load_ms": _ms(lambda path=path: wire.load_tensors(path), args.repeats, sync),
                "load_to_device_ms": _ms(lambda path=path: wire.load_tensors(path)[0].to(device), args.repeats, sync),
            }
            # The timed iterations' path: a slot written from the device by one process, read onto the device by
            # another, and the host's copy of a slot into the judge's (page-locked mappings where there is a GPU).
            pinned = device.type == "cuda"
            writer = wire.Slot.open(folder / "feed.slot", writable=True, pinned=pinned)
            reader = wire.Slot.open(folder / "feed.slot", writable=False, pinned=pinned)
            nbytes = writer.write([x])
            row["slot_write_ms"] = _ms(lambda writer=writer, x=x: writer.write([x]), args.repeats, sync)
            row["slot_read_to_device_ms"] = _ms(
                lambda reader=reader: reader.read()[0].to(device, copy=True), args.repeats, sync
            )
            row["host_copy_ms"] = _ms(
                lambda nbytes=nbytes: copy_plain_file(folder / "feed.slot", folder / "copy.slot", nbytes),
                args.repeats,
                sync,
            )
            writer.close()
            reader.close()
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
    (out / "exchange_io.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
