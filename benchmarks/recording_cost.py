"""What recording one result costs (``result_record``: queries and CPU) as the model run it belongs to grows, and what
the web worker's job that then scores the run costs; writes a dated results file.

    python benchmarks/recording_cost.py --db 10x=postgres://postgres@127.0.0.1:5432/arena_demo_1000 \
        [--sizes 30,180,1000] [--repeat 5] [--out benchmarks/results] [--label NAME]

On a database filled by ``seed_demo`` (``benchmarks/ranking_pages.py`` says how), for each run size n: inside a
transaction that is rolled back afterwards (the data stay as seeded), a model run of n attempts is made on one
hardware profile over the demo problems (k = n / problems, rounded up), every attempt but one already evaluated;
the last attempt, always the same problem and attempt number, is then recorded through ``result_record`` with a
passed result, and the queries and the CPU of that call are counted. The problem, profile and result are the same
at every size, so only the run's size changes: recording is O(1) in the run's size when the query count is the same
for every n. The scoring job (``run_score_refresh_stale``, once per batch of results) is measured beside it: it scores
the whole run, so its CPU grows with n by design, its queries should not.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ["DEBUG"] = "0"
os.environ.setdefault("SECRET_KEY", "benchmark-only-" + os.urandom(24).hex())
os.environ.setdefault("HTTPS", "0")
os.environ.setdefault("ARENA_REDIS_WITHOUT_PASSWORD", "1")
os.environ.setdefault("ARENA_WORKER_KEYS", "bench:evaluations=" + os.urandom(24).hex())
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")


class _Rollback(Exception):
    pass


def _make_run(template, problems, n: int, profile: str):
    """A model run of ``n`` attempts (attempt i: problem i mod P, number i // P + 1), all evaluated but the first."""
    import hashlib

    from django.utils import timezone

    from leaderboard.management.commands.seed_demo import _document
    from leaderboard.models import ModelRun, Result, Submission

    k = math.ceil(n / len(problems))
    run = ModelRun.objects.create(
        user=template.user,
        model=f"recording-cost-{n}",
        mode=template.mode,
        k=k,
        profile=profile,
        precision=template.precision,
        suite=template.suite,
        suite_version=template.suite_version,
        is_demo=True,
        state=ModelRun.State.RUNNING,
        attempts_total=n,
        attempts_done=n - 1,
    )
    now = timezone.now()
    rows = []
    for i in range(n):
        problem, attempt = problems[i % len(problems)], i // len(problems) + 1
        text = f"def solution(x):\n    return x  # {n} {i}\n"
        rows.append(
            Submission(
                user=template.user,
                problem=problem,
                profile=profile,
                problem_version=problem.version,
                problem_hash=problem.content_hash,
                filename=f"attempt_{attempt}.py",
                source=text,
                sha256=hashlib.sha256(text.encode()).hexdigest(),
                state=Submission.State.RUNNING if i == 0 else Submission.State.FINISHED,
                verdict=None if i == 0 else "wrong_output",
                job_id=f"recording-cost-{n}-{i}",
                enqueue_count=1,
                enqueued_at=now,
                job_timeout_s=600,
                worker="bench-host",
                started_at=now,
                finished_at=None if i == 0 else now,
                model_run=run,
                attempt=attempt,
            )
        )
    created = Submission.objects.bulk_create(rows, batch_size=1000)
    Result.objects.bulk_create(
        [
            Result(
                submission=s,
                document=_document(s.problem, "wrong_output", None, 100.0, 10.0),
                verdict="wrong_output",
                problem_version=s.problem.version,
                problem_hash=s.problem.content_hash,
                worker="bench-host",
            )
            for s in created[1:]
        ],
        batch_size=1000,
    )
    return run, created[0]


def measure(sizes: list[int], repeat: int) -> dict:
    import django

    django.setup()
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from leaderboard.management.commands.seed_demo import _document
    from leaderboard.models import ModelRun, Problem
    from leaderboard.rankings.services import run_score_refresh_stale
    from leaderboard.submissions.results import result_record

    template = ModelRun.objects.filter(is_demo=True).exclude(profile__startswith="cpu").order_by("pk").first()
    if template is None:
        raise SystemExit("recording_cost: no demo runs here; run `python manage.py seed_demo` first")
    profile = template.profile
    problems = [p for p in Problem.objects.filter(suite="demo", is_active=True).order_by("id") if p.supports(profile)]
    rows = []
    for n in sizes:
        queries, cpu, job_queries, job_cpu = [], [], [], []
        for _ in range(repeat):
            try:
                with transaction.atomic():
                    run, attempt = _make_run(template, problems, n, profile)
                    document = _document(attempt.problem, "passed", 1.5, 100.0, 10.0)
                    with CaptureQueriesContext(connection) as captured:
                        c0 = time.process_time()
                        result_record(submission_id=attempt.pk, document=document)
                        cpu.append((time.process_time() - c0) * 1000)
                    queries.append(len(captured))
                    ModelRun.objects.filter(pk=run.pk).update(score_stale_since=timezone.now())
                    with CaptureQueriesContext(connection) as captured:
                        c0 = time.process_time()
                        run_score_refresh_stale(model_run_id=run.pk)
                        job_cpu.append((time.process_time() - c0) * 1000)
                    job_queries.append(len(captured))
                    raise _Rollback
            except _Rollback:
                pass
        row = {
            "run_attempts": n,
            "k": math.ceil(n / len(problems)),
            "queries": sorted(set(queries)),
            "cpu_median_ms": round(statistics.median(cpu), 2),
            "scoring_job_queries": sorted(set(job_queries)),
            "scoring_job_cpu_median_ms": round(statistics.median(job_cpu), 2),
        }
        rows.append(row)
        print(f"  {row}", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("select version()" if connection.vendor == "postgresql" else "select sqlite_version()")
        db_version = cursor.fetchone()[0]
    return {
        "database": connection.settings_dict.get("NAME"),
        "profile": profile,
        "problems": len(problems),
        "recorded_problem": problems[0].id,
        "sizes": rows,
        "environment": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "database": f"{connection.vendor}: {db_version.split(' on ')[0]}",
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
    }


def write_report(out: Path, command: str, results: dict[str, dict], label: str = "") -> Path:
    today = date.today().isoformat()
    stem = f"recording_cost_{today}" + (f"_{label}" if label else "")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps({"date": today, "command": command, "results": results}, indent=2))
    lines = [f"# Recording one result as the model run grows — {today}", "", f"Command: `{command}`", ""]
    for name, r in results.items():
        env = r["environment"]
        lines += [
            f"## {name} (`{r['database']}`)",
            "",
            f"A run on {r['profile']} over {r['problems']} demo problems; the result recorded is attempt 1 of "
            f"{r['recorded_problem']}, passed, at every size. Python {env['python']}, {env['cpus']} CPUs, "
            f"{env['database']}, load average {env['load_average'][0]} (a machine shared with other work).",
            "",
            "| attempts in the run | k | `result_record` queries | CPU median ms | scoring job queries | "
            "scoring job CPU median ms |",
            "|---:|---:|---|---:|---|---:|",
        ]
        lines += [
            f"| {s['run_attempts']} | {s['k']} | {', '.join(map(str, s['queries']))} | {s['cpu_median_ms']} | "
            f"{', '.join(map(str, s['scoring_job_queries']))} | {s['scoring_job_cpu_median_ms']} |"
            for s in r["sizes"]
        ]
        flat = len({q for s in r["sizes"] for q in s["queries"]}) == 1
        lines += [
            "",
            "Recording one result makes the same number of queries at every run size."
            if flat
            else "Recording one result does NOT make the same number of queries at every run size.",
            "",
        ]
    path = out / f"{stem}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", action="append", default=[], metavar="LABEL=URL", help="default: DATABASE_URL")
    parser.add_argument("--sizes", default="30,180,1000", help="attempts per run, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--label", default="")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.child:
        Path(args.child).write_text(json.dumps(measure(sizes, args.repeat)))
        return 0
    command = "python benchmarks/recording_cost.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    results = {}
    for label, url in [d.split("=", 1) for d in args.db] or [["here", os.environ.get("DATABASE_URL", "")]]:
        print(f"{label}: {url}", flush=True)
        out = Path(f"/tmp/recording_cost_{os.getpid()}_{label}.json")
        child = [sys.executable, __file__, "--child", str(out), "--sizes", args.sizes, "--repeat", str(args.repeat)]
        subprocess.run(child, env=dict(os.environ, **({"DATABASE_URL": url} if url else {})), check=True)
        results[label] = json.loads(out.read_text())
        out.unlink()
    print(f"wrote {write_report(Path(args.out), command, results, args.label)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
