"""Every problem's plain torch.distributed starter (evaluator/starters.py), as the problem page offers it, through
`arena eval` on the problem's first CPU profile: the verdict of each, and a count.

    .venv/bin/python benchmarks/starters_cpu.py [--trials 2] [--timing] [--json out.json] [PROBLEM ...]

Correctness only unless --timing (CPU timings only check the pipeline)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluator import starters  # noqa: E402
from problems.registry import catalogue  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    problems = catalogue()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for problem_id in args.problems or sorted(problems):
            problem = problems[problem_id]
            starter = starters.starter(problem, starters.PLAIN)
            path = Path(folder) / starter.filename
            path.write_text(starter.source)
            hardware = starters.profiles_for(problem, "cpu")[0]
            command = [
                sys.executable,
                "-m",
                "evaluator.cli",
                "eval",
                "--problem",
                problem_id,
                "--solution",
                str(path),
                "--hardware",
                hardware,
                "--trials",
                str(args.trials),
                "--json",
            ]
            if not args.timing:
                command.append("--no-timing")
            began = time.monotonic()
            out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
            try:
                doc = json.loads(out.stdout)
                verdict, message = doc["verdict"], doc["message"]
            except (ValueError, KeyError):
                verdict, message = "no result", (out.stderr or out.stdout)[-300:]
            rows.append(
                {
                    "problem": problem_id,
                    "hardware": hardware,
                    "verdict": verdict,
                    "message": message,
                    "wall_s": round(time.monotonic() - began, 1),
                }
            )
            print(f"{problem_id:48} {hardware:13} {verdict:14} {rows[-1]['wall_s']:6.1f} s  {message[:80]}", flush=True)
    counts = Counter(r["verdict"] for r in rows)
    print(", ".join(f"{n} {v}" for v, n in counts.most_common()))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if counts.get("passed", 0) == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
