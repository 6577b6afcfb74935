"""Every ParallelKittens and NVSHMEM known answer, built and run at one rank on one GPU: writes figures to OUTDIR.

  python benchmarks/backends_gpu.py OUTDIR [--budget-s 540] [--thunderkittens PATH] [--only SUBSTRING]

On the one-rank smoke profile h200-smoke-1 (never ranked), through the whole evaluator (sandbox, separated judge,
compiled timer): each known answer of a GPU-only backend (docs/backends/) under problems/*/*/solutions/ is
evaluated once; its first call builds it (load_inline with ThunderKittens, or Triton with NVSHMEM's device library),
so the set-up time is its build time; correct ones must pass, wrong ones must not. Every known answer here can run
at one rank (the NVSHMEM ones skip the rendezvous there). Writes backends_gpu.json after every evaluation and
backends_gpu.md at the end; one failure never stops the others.

ThunderKittens: ``--thunderkittens``, else ``ARENA_THUNDERKITTENS``, else ``.gpu/thunderkittens`` in this checkout (an
ignored folder that travels with the working tree); without one, the ParallelKittens answers are recorded as
skipped and the output says so. NVLink multicast stays off in every process."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import MULTICAST_OFF  # noqa: E402

os.environ.update(MULTICAST_OFF)

from evaluator.contract import backends  # noqa: E402
from evaluator.contract.spec import EvalSpec  # noqa: E402

PROFILE = "h200-smoke-1"
COMMAND = "python benchmarks/backends_gpu.py OUTDIR"
# The set-up limit per backend (on one H200 a cold ThunderKittens build took 35-55 s and an NVSHMEM answer's Triton
# build 21-24 s; an answer whose barrier never returns must still leave a timeout verdict and its logs behind), and
# the rough cost of one evaluation, to skip what the budget cannot finish. ParallelKittens answers run first.
SETUP_LIMIT_S = {"parallelkittens": 240.0, "nvshmem": 150.0}
ESTIMATE_S = {"parallelkittens": 90.0, "nvshmem": 40.0}
ORDER = ("parallelkittens", "nvshmem")


def known_answers(only: str | None) -> list[dict]:
    found = []
    for path in sorted(ROOT.glob("problems/*/*/solutions/*/*.py")):
        source = path.read_text()
        try:
            backend = backends.declared_backend(source, path.name)
        except backends.BackendError:
            continue
        if backend not in backends.GPU_ONLY:
            continue
        rel = path.relative_to(ROOT).as_posix()
        if only and only not in rel:
            continue
        kind = path.parent.name
        problem = "/".join(path.relative_to(ROOT / "problems").parts[:2])
        found.append(
            {
                "file": rel,
                "problem": problem,
                "backend": backend,
                "kind": kind,
                "expected": "passed" if kind == "correct" else "not passed",
            }
        )
    return found


def thunderkittens(arg: str | None) -> dict:
    """Finds the checkout, makes it readable by the sandbox's uid, and sets ARENA_THUNDERKITTENS for the evaluator."""
    candidates = [arg, os.environ.get(backends.THUNDERKITTENS_ENV), str(ROOT / ".gpu" / "thunderkittens")]
    for c in candidates:
        if c and (Path(c) / "include" / "kittens.cuh").is_file():
            path = str(Path(c).resolve())
            os.environ[backends.THUNDERKITTENS_ENV] = path
            shown = Path(path).relative_to(ROOT).as_posix() if Path(path).is_relative_to(ROOT) else path
            info: dict = {"path": shown, "pinned": backends.THUNDERKITTENS_COMMIT}  # the host's own layout stays out
            import hashlib

            digest = hashlib.sha256()
            for f in sorted((Path(path) / "include").rglob("*")):
                if f.is_file():
                    digest.update(f.relative_to(path).as_posix().encode() + b"\0" + f.read_bytes())
            info["include_sha256"] = digest.hexdigest()
            if (Path(path) / ".git").exists():
                rev = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True)
                info["commit"] = rev.stdout.strip() or rev.stderr.strip()[:200]
            if os.geteuid() == 0:
                # The ranks run as an unprivileged uid: the headers must be world-readable.
                subprocess.run(["chmod", "-R", "a+rX", path], capture_output=True)
            return info
    os.environ.pop(backends.THUNDERKITTENS_ENV, None)
    return {
        "path": None,
        "pinned": backends.THUNDERKITTENS_COMMIT,
        "missing": f"no ThunderKittens checkout: tried {[c for c in candidates if c]}; ParallelKittens answers "
        f"skipped (fetch HazyResearch/ThunderKittens at {backends.THUNDERKITTENS_COMMIT[:8]} into "
        f".gpu/thunderkittens or set {backends.THUNDERKITTENS_ENV})",
    }


def nvshmem_header_constants() -> list[str]:
    """The installed NVSHMEM headers' lines that define the comparison and signal-operation numbers, to set beside
    evaluator/rank/backends/nvshmem.py (torch's docstrings give other numbers)."""
    try:
        import nvidia.nvshmem

        include = Path(list(nvidia.nvshmem.__path__)[0]) / "include"
    except Exception as exc:  # noqa: BLE001
        return [f"no NVSHMEM headers ({type(exc).__name__})"]
    starts = ("enum nvshmemi_cmp_type", "enum nvshmem_signal_ops", "NVSHMEMI_AMO_ACK", "NVSHMEM_SIGNAL_SET =")
    lines = []
    for header in sorted(include.rglob("*.h*")):
        text = header.read_text(errors="replace").splitlines()
        for n, line in enumerate(text):
            if any(s in line for s in starts) and len(lines) < 12:
                # An enum's members take their numbers from their order: keep the lines that follow it.
                body = " ".join(t.strip() for t in text[n : n + 12])
                lines.append(f"{header.relative_to(include)}:{n + 1}: {body[:400]}")
    return lines


def environment() -> dict:
    env: dict = {"python": platform.python_version()}
    try:
        import torch

        env.update(
            {
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            }
        )
        import torch.distributed._symmetric_memory as symm_mem

        env["nvshmem_available"] = bool(symm_mem.is_nvshmem_available())
    except Exception as exc:  # noqa: BLE001
        env["torch_error"] = f"{type(exc).__name__}: {exc}"
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        env["triton_error"] = str(exc)
    try:
        from importlib.metadata import version

        env["nvshmem"] = version("nvidia-nvshmem-cu13")
    except Exception as exc:  # noqa: BLE001
        env["nvshmem"] = f"unknown ({type(exc).__name__})"
    env["nvshmem_header_constants"] = nvshmem_header_constants()
    nvcc = shutil.which("nvcc")
    env["nvcc"] = (
        subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        if nvcc
        else None
    )
    env["bwrap"] = (
        subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
        if shutil.which("bwrap")
        else None
    )
    env["multicast_off"] = {k: os.environ.get(k) for k in MULTICAST_OFF}
    return env


def evaluate_one(entry: dict, trials: int, iterations: int) -> dict:
    from evaluator.host.evaluate import evaluate

    path = ROOT / entry["file"]
    t = time.monotonic()
    doc = evaluate(
        EvalSpec(
            problem_id=entry["problem"],
            solution_source=path.read_text(),
            solution_name=path.name,
            profile=PROFILE,
            trials=trials,
            timing_iterations=iterations,
            warmup_iterations=3,
            timeouts={"setup": SETUP_LIMIT_S[entry["backend"]], "correctness": 120.0, "timing": 120.0},
        )
    )
    wall = time.monotonic() - t
    timing = doc.get("timing") or {}
    timeline = doc.get("timeline") or {}
    phases = doc.get("phases") or {}
    logs = doc.get("logs") or {}
    return {
        "verdict": doc["verdict"],
        "message": (doc.get("message") or "")[:600],
        "wall_s": round(wall, 1),
        "phases": phases,
        "timeline": timeline,
        "solution_backend": (doc.get("solution") or {}).get("backend"),
        "multicast_allowed": (doc.get("profile") or {}).get("multicast_allowed"),
        "static_refusals": (doc.get("static_checks") or {}).get("refusals"),
        "solution_median_us": (timing.get("solution") or {}).get("median_us"),
        "baseline_median_us": (timing.get("baseline") or {}).get("median_us"),
        "speedup": timing.get("speedup"),
        "environment": doc.get("environment"),
        "logs": {k: v[-3000:] for k, v in logs.items()},
    }


def markdown(report: dict) -> str:
    env, tk = report["environment"], report["thunderkittens"]
    lines = [
        f"# ParallelKittens and NVSHMEM known answers at one rank ({report['date']})",
        "",
        f"`{report['command']}` on {env.get('gpu')}, torch {env.get('torch')}, Triton {env.get('triton')}, "
        f"NVSHMEM {env.get('nvshmem')} (available: {env.get('nvshmem_available')}), {env.get('nvcc')}, "
        f"{env.get('bwrap')}; profile `{report['profile']}` (one rank, multicast not allowed).",
        "",
        f"ThunderKittens: {tk.get('path') or tk.get('missing')}"
        + (f" at {tk.get('commit')}" if tk.get("commit") else "")
        + f" (pinned {tk['pinned'][:8]}).",
        "",
        "| known answer | backend | expected | verdict | as expected | set-up (build) s | solution µs | "
        "wall s | message |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['file']} | {r['backend']} | {r['expected']} | {r.get('verdict')} | {r.get('ok')} | "
            f"{(r.get('phases') or {}).get('setup')} | {r.get('solution_median_us')} | {r.get('wall_s')} | "
            f"{(r.get('message') or r.get('skipped') or '')[:160]} |"
        )
    ok = sum(1 for r in report["results"] if r.get("ok"))
    lines += ["", f"{ok} of {len(report['results'])} as expected; {report['total_s']} s in all."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting evaluations after this long")
    parser.add_argument("--thunderkittens", default=None, help="ThunderKittens checkout (default: see the docstring)")
    parser.add_argument("--only", default=None, help="only known answers whose path contains this")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "command": COMMAND,
        "profile": PROFILE,
        "thunderkittens": thunderkittens(args.thunderkittens),
        "environment": environment(),
        "results": [],
    }
    try:
        from evaluator import timer as compiled_timer
        from evaluator.host import sandbox

        t = time.monotonic()
        compiled_timer.build()
        report["timer_build_s"] = round(time.monotonic() - t, 1)
        report["sandbox_probe"] = sandbox.probe("cuda") or "ok"
    except Exception as exc:  # noqa: BLE001
        report["setup_error"] = f"{type(exc).__name__}: {exc}"
    entries = sorted(known_answers(args.only), key=lambda e: ORDER.index(e["backend"]))
    os.environ.setdefault("NVSHMEM_DEBUG", "WARN")  # NVSHMEM's own warnings reach the rank's log
    for entry in entries:
        row = dict(entry)
        report["results"].append(row)
        left = args.budget_s - (time.monotonic() - started)
        if entry["backend"] == "parallelkittens" and not report["thunderkittens"].get("path"):
            row["skipped"] = report["thunderkittens"]["missing"]
        elif left < ESTIMATE_S[entry["backend"]]:
            row["skipped"] = f"time budget: {left:.0f} s left of {args.budget_s:.0f}"
        else:
            try:
                row.update(evaluate_one(entry, args.trials, args.iterations))
                row["ok"] = (
                    row["verdict"] == "passed"
                    if entry["kind"] == "correct"
                    else row["verdict"] not in ("passed", "infra_error", "rejected")
                )
            except Exception as exc:  # noqa: BLE001
                row.update(
                    {
                        "verdict": "script_error",
                        "message": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc()[-3000:],
                        "ok": False,
                    }
                )
        print(
            json.dumps({k: row.get(k) for k in ("file", "verdict", "ok", "wall_s", "skipped", "message")}), flush=True
        )
        if row.get("ok") is False:
            print(json.dumps(row.get("logs") or {})[-2000:], flush=True)
        report["total_s"] = round(time.monotonic() - started, 1)
        (out / "backends_gpu.json").write_text(json.dumps(report, indent=1))
    report["total_s"] = round(time.monotonic() - started, 1)
    (out / "backends_gpu.json").write_text(json.dumps(report, indent=1))
    (out / "backends_gpu.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
