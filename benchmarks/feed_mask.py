"""What masking a feed frame costs (docs/protocol.md, revision 16): the judge masks each call's frame as it writes it
and the engine unmasks it as it copies the inputs out, the same keystream both ways (``_engine.cpp`` ``apply_mask``:
AES-128 in counter mode where the CPU has AES instructions, else SipHash's rounds),
so a window of a frame of N bytes pays about twice the figure here, on both sides alike. Beside it, a plain copy of
the same data (``Tensor.clone``), what the window paid for those bytes before. Writes OUTDIR/feed_mask.json.

  python benchmarks/feed_mask.py OUTDIR [--mib 1 16 64] [--repeats 7]"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator import timer, wire  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--mib", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    engine = timer.load(timer.build())
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        feed = wire.Slot.open(Path(folder) / "feed", writable=True, pinned=False)
        for mib in args.mib:
            values = torch.randn(mib << 18)  # float32: mib MiB
            n = feed.write([values])
            frame = feed.bytes[:n].numpy()
            masks, copies = [], []
            for _ in range(args.repeats):
                began = time.perf_counter()
                engine.mask_frame(frame, timer.mask_key())
                masks.append(time.perf_counter() - began)
                began = time.perf_counter()
                values.clone()
                copies.append(time.perf_counter() - began)
            mask_s, copy_s = statistics.median(masks), statistics.median(copies)
            rows.append(
                {
                    "mib": mib,
                    "mask_ms_median": round(mask_s * 1e3, 2),
                    "mask_gib_per_s": round(mib / 1024 / mask_s, 2),
                    "copy_ms_median": round(copy_s * 1e3, 2),
                }
            )
            print(rows[-1], flush=True)
    args.outdir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/feed_mask.py OUTDIR --mib " + " ".join(map(str, args.mib))
    keystream = engine.mask_stream(0, 16, (0, 0))[1]  # AES-128 in counter mode where the CPU has it
    (args.outdir / "feed_mask.json").write_text(
        json.dumps(
            {"date": time.strftime("%Y-%m-%d"), "command": command, "keystream": keystream, "rows": rows}, indent=1
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
