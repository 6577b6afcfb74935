"""Runs the cheat suite (tests/evaluator/test_cheats.py: every cheat with the verdict it must get, and the honest
solutions that must pass) through evaluator.host.evaluate on a profile (GPU or CPU), and writes what it got.

  python3 benchmarks/cheat_suite.py OUTDIR [--profile h200-nvlink-4] [--only NAME,NAME] [--param numel=1024]
      [--windows]

Writes OUTDIR/cheat_suite.json (one row per case: expected, got, message, wall time, the containment the result
recorded, the host clock's cross-check) and OUTDIR/cheat_suite.md (the same as a table). Exits 0 when every case got
its verdict, 1 otherwise.
Needs only torch and this repository (no pytest, rq or Django). NVLink multicast stays off in every process.
About 35 evaluations of ~7 s each on 4 H200s; the hang case uses a 4 s limit for its correctness phase.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402  (no torch import: set before torch loads)

os.environ.update(MULTICAST_OFF)


def _load_table() -> types.ModuleType:
    """Imports tests/evaluator/test_cheats.py for its table; GPU hosts may have no pytest, so a stand-in is used."""
    try:
        import pytest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("pytest")
        identity = lambda *args, **kwargs: lambda f: f  # noqa: E731
        stub.mark = types.SimpleNamespace(parametrize=identity, skipif=identity)  # type: ignore[attr-defined]
        stub.fixture = lambda f=None, **kwargs: f if f is not None else (lambda g: g)  # type: ignore[attr-defined]
        stub.skip = lambda *a, **k: None  # type: ignore[attr-defined]
        sys.modules["pytest"] = stub
    spec = importlib.util.spec_from_file_location("arena_cheat_table", ROOT / "tests" / "evaluator" / "test_cheats.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def _caught_by(doc: dict) -> str:
    message = doc.get("message", "")
    if "host's clock" in message:
        return "host clock"
    if message.startswith("the static check"):
        return "static check"
    if "sandbox refused" in message:
        return "audit hook"
    if (
        "the solution replaced" in message
        or "the solution added" in message
        or "re-registered" in message
        or "mode active" in message
        or "the solution changed" in message
    ):
        return "integrity check"
    if "while being timed" in message or "wrote to its inputs while" in message:
        return "timing re-check"
    if "physically impossible" in message:
        return "roofline"
    if "result channel" in message:
        return "result channel"
    if "process group" in message:
        return "subreaper"
    return doc.get("verdict", "")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--profile", default="h200-nvlink-4")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        help="NAME=VALUE: a size for the cases on the suite's own problem that set none (repeatable)",
    )
    parser.add_argument(
        "--windows",
        action="store_true",
        help="GPU hosts choose several calls to a timed window from the baseline's warm-up, as evaluator/host/batch.py "
        "would with AUTOMATIC on (off in the product): how the suite fares with them",
    )
    args = parser.parse_args()
    if args.windows:
        from evaluator.host import batch

        batch.AUTOMATIC = True
    sizes = tuple((k, int(v)) for k, v in (p.split("=", 1) for p in args.param))
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)

    table = _load_table()
    from evaluator.contract.profiles import get_profile

    profile = get_profile(args.profile, allow_smoke=True)
    gpu = profile.device == "cuda"
    only = {n for n in args.only.split(",") if n}
    rows: list[dict] = []
    started = time.monotonic()
    parent = Path(tempfile.mkdtemp(prefix="arena-cheat-suite-"))
    os.chmod(parent, 0o755)
    try:
        for kind, cases in (("cheat", table.CHEATS), ("honest", table.HONEST)):
            for case in cases:
                if only and case.name not in only:
                    continue
                if (case.where == "gpu" and not gpu) or (case.where == "cpu" and gpu) or case.profile:
                    continue
                if sizes and case.problem == table.PROBLEM and not case.params:
                    case = dataclasses.replace(case, params=sizes)
                try:
                    doc, wall = table.run_case(case, args.profile, gpu, parent)
                    problems = table.problems_with(case, doc)
                except Exception as exc:  # the suite reports an evaluator crash as a failed row, then goes on
                    doc, wall, problems = {"verdict": "harness crashed", "message": repr(exc)}, 0.0, [repr(exc)]
                timing = doc.get("timing") or {}
                if doc.get("environment") and not ENVIRONMENT:
                    ENVIRONMENT.update(doc["environment"])
                row = {
                    "kind": kind,
                    "case": case.name,
                    "expected": case.expected,
                    "got": doc.get("verdict"),
                    "ok": not problems,
                    "problems": problems,
                    "caught_by": _caught_by(doc),
                    "message": (doc.get("message") or "")[:400],
                    "wall_s": round(wall, 2),
                    "speedup": timing.get("speedup"),
                    "calls_per_window": timing.get("calls_per_window"),
                    "host_clock": timing.get("host_clock"),
                    "failed_ranks": doc.get("failed_ranks"),
                    "flags": doc.get("flags"),
                    "containment": doc.get("containment"),
                }
                if not row["ok"]:
                    row["logs"] = {k: v[-2000:] for k, v in (doc.get("logs") or {}).items()}
                rows.append(row)
                print(
                    json.dumps({k: row[k] for k in ("case", "expected", "got", "ok", "wall_s", "message")}), flush=True
                )
                _write(out, args.profile, rows, started)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    _write(out, args.profile, rows, started)
    bad = [r["case"] for r in rows if not r["ok"]]
    print(
        f"{len(rows) - len(bad)}/{len(rows)} cases got their verdict in {time.monotonic() - started:.0f} s"
        + (f"; wrong: {', '.join(bad)}" if bad else ""),
        flush=True,
    )
    return 1 if bad else 0


ENVIRONMENT: dict = {}  # what the ranks reported (the launcher itself never touches a GPU)


def _write(out: Path, profile: str, rows: list[dict], started: float) -> None:
    env = {
        "python": platform.python_version(),
        "host": platform.node(),
        "launcher_uid": os.getuid(),
        "torch": ENVIRONMENT.get("torch", "?"),
        "gpus": ENVIRONMENT.get("gpus", []),
        "ranks": ENVIRONMENT,
    }
    doc = {
        "profile": profile,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "environment": env,
        "wall_s": round(time.monotonic() - started, 1),
        "all_ok": all(r["ok"] for r in rows),
        "rows": rows,
    }
    (out / "cheat_suite.json").write_text(json.dumps(doc, indent=2, default=str))
    gpus = f"{ENVIRONMENT.get('gpu_count', 0)} × {', '.join(env['gpus']) or 'no GPU'}"
    lines = [
        f"# Cheat suite on {profile}",
        "",
        f"{doc['date']}, {env['host']}, torch {env['torch']}, {gpus}; "
        f"{sum(r['ok'] for r in rows)}/{len(rows)} as expected.",
        "",
        "| case | kind | expected | got | caught by | ok | speedup | calls a window | unaccounted µs (allowed) "
        "| message |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        message = r["message"].replace("|", "\\|").replace("\n", " ")[:160]
        clock = r.get("host_clock") or {}
        unaccounted = f"{clock['unaccounted_us']:.0f} ({clock['allowance_us']:.0f})" if clock.get("checked") else ""
        speedup = f"{r['speedup']:.2f}" if isinstance(r.get("speedup"), (int, float)) else ""
        lines.append(
            f"| {r['case']} | {r['kind']} | {r['expected']} | {r['got']} | {r['caught_by']} | "
            f"{'yes' if r['ok'] else '**NO**'} | {speedup} | {r.get('calls_per_window') or ''} | {unaccounted} | "
            f"{message} |"
        )
    (out / "cheat_suite.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
