"""CPU, queries and size of every ranking page rendered uncached, on databases filled by ``seed_demo``, and how
each grows from one data size to the next; writes a dated results file.

    for n in 100 1000; do
      export DATABASE_URL=postgres://postgres@127.0.0.1:5432/arena_demo_$n
      DEBUG=1 python manage.py migrate && DEBUG=1 python manage.py load_problems
      DEBUG=1 python manage.py seed_demo --runs $n --problems 60 --attempts 3
    done
    python benchmarks/ranking_pages.py --db 1x=postgres://postgres@127.0.0.1:5432/arena_demo_100 \
        --db 10x=postgres://postgres@127.0.0.1:5432/arena_demo_1000 [--repeat 30] [--out benchmarks/results]

Per database (each in a process of its own, production settings: DEBUG off, the page cache off so every request
renders the page):

1. **Per page** (Django's test client, no network): the SQL queries of one request; the CPU time of this
   process per request (``time.process_time``: Django, the template, the test client), median and 95th
   percentile over ``--repeat`` requests after three warm-up requests; the CPU the PostgreSQL backend serving this
   connection spent, averaged over the same requests (read from /proc: PostgreSQL on this machine); the bytes.
   Rows the tree keeps once built (``leaderboard/rankings/memo.py``) are reused from one request to the next, as
   after one result changed one run; ``--rows-rebuilt`` drops them before every measured request (every row built
   afresh).
2. **Recording one result**: queries and CPU of ``result_record`` for one attempt of the smallest and the largest
   run (the attempt's result taken away and recorded again inside a transaction that is rolled back): what a result
   costs at ingest; and of the web worker's job that then scores the run once per batch of results.
3. **Under load** (``--concurrency N``, 0 by default): gunicorn serving the same database, N client threads
   requesting the pages in turn for ``--seconds`` (``benchmarks/load_test.py`` is the fuller load test).

The results go to ``OUT/ranking_pages_<date>[_<label>].json`` and ``.md``, with the command that produced them;
with two or more ``--db``, the growth of each page's CPU and queries from the first to the last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
# Measured as production runs (DEBUG off, so no query log or debug pages), on plain http: TLS is the proxy's job.
os.environ["DEBUG"] = "0"
os.environ.setdefault("SECRET_KEY", "benchmark-only-" + os.urandom(24).hex())
os.environ.setdefault("HTTPS", "0")
os.environ["ALLOWED_HOSTS"] = os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1") + ",testserver"
os.environ.setdefault("ARENA_REDIS_WITHOUT_PASSWORD", "1")  # the local Redis of a benchmark machine has none
os.environ.setdefault("ARENA_WORKER_KEYS", "bench:evaluations=" + os.urandom(24).hex())  # no worker reports here
os.environ.setdefault("ARENA_PAGE_CACHE", "0")  # every request renders its page: the cost a cache only hides
# A Redis database of its own: the comparison being computed asks for its job there, and no worker serves it.
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")


TARGET_CPU_MS = 10.0  # issue #28: every page and export renders uncached in at most this much CPU (median)


def _pages() -> list[tuple[str, str]]:
    """(name, path) of every page measured, picked from the seeded data (the pages of issue #28's table)."""
    from django.contrib.auth import get_user_model

    from leaderboard.models import ModelRun, Problem

    from leaderboard.models import ProblemStanding, RunComparison
    from leaderboard.rankings.services import run_comparison_refresh

    runs = list(ModelRun.objects.filter(is_demo=True).order_by("id").values_list("id", "profile")[:3])
    if len(runs) < 3:
        raise SystemExit(
            "ranking_pages: no demo runs here; run `python manage.py seed_demo --runs 100 "
            "--problems 60 --attempts 3` first (with the same DATABASE_URL)."
        )
    (a, profile), (b, _), (c, _) = runs
    # The comparison a reader gets once the web worker computed it (its job, run here), and one it has not: the
    # page that says so and asks for it (no worker runs here, so it stays that way for every repeat).
    run_comparison_refresh(a_id=a, b_id=b)
    RunComparison.objects.filter(a_id=a, b_id=c).delete()
    problem = Problem.objects.filter(suite="demo").order_by("id").values_list("id", flat=True).first()
    user = get_user_model().objects.filter(username__startswith="demo-user-").order_by("username").first()
    # The profile with the most rows in the problem's stored ranking: a GPU one wherever the seed measured speed.
    gpu = (
        ProblemStanding.objects.filter(problem_id=problem)
        .exclude(profile__startswith="cpu")
        .order_by("-solutions")
        .values_list("profile", flat=True)
        .first()
        or profile
    )
    return [
        ("home", "/"),
        ("home, one category", f"/?category={problem.split('/')[0]}"),
        ("ranking", "/runs/"),
        ("ranking, filtered and sorted", f"/runs/?profile={profile}&mode=agentic&sort=-fast_2"),
        ("ranking, page 2", "/runs/?per_page=25&page=2"),
        ("ranking CSV export", "/runs/?format=csv"),
        ("ranking JSON export", "/runs/?format=json"),
        ("model run page", f"/runs/{a}/"),
        ("model run attempts JSON", f"/runs/{a}/?format=json&table=attempts"),
        ("comparison", f"/runs/compare/?a={a}&b={b}"),
        ("comparison CSV export", f"/runs/compare/?a={a}&b={b}&format=csv"),
        ("comparison being computed", f"/runs/compare/?a={a}&b={c}"),
        ("API comparison", f"/api/rankings/compare/?a={a}&b={b}"),
        ("problem page", f"/problems/{problem}/?profile={profile}"),
        ("problem ranking CSV export", f"/problems/{problem}/?profile={profile}&format=csv"),
        ("problem page, GPU profile", f"/problems/{problem}/?profile={gpu}"),
        ("API problem ranking", f"/api/problems/{problem}/ranking/?profile={gpu}"),
        ("user page", f"/users/{user.username}/"),
        ("user page runs JSON export", f"/users/{user.username}/?format=json"),
        ("API ranking", "/api/rankings/model-runs/"),
        ("API model run", f"/api/model-runs/{a}/"),
        # (since pages39) the ranking under its other orders, a filter alone, and the API under another order
        ("ranking, sorted by geomean", "/runs/?sort=-speedup"),
        ("ranking, sorted ascending", "/runs/?sort=fast_1"),
        ("ranking, newest first", "/runs/?sort=-created"),
        ("ranking, one GPU profile", f"/runs/?profile={gpu}"),
        ("API ranking, sorted", "/api/rankings/model-runs/?sort=-fast_2"),
    ]


def _backend_cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) the PostgreSQL backend ``pid`` has used, from /proc (None: not readable here)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content


def _forget_rows() -> None:
    """Drops the rows the tree keeps once built (``leaderboard/rankings/memo.py``; a tree without it keeps none)."""
    try:
        from leaderboard.rankings.memo import forget_all
    except ImportError:
        return
    forget_all()


def in_process(pages: list[tuple[str, str]], repeat: int, rows_rebuilt: bool = False) -> list[dict]:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.get("/")  # connect
    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()" if connection.vendor == "postgresql" else "select null")
        backend = cursor.fetchone()[0]
    rows = []
    for name, path in pages:
        for _ in range(3):
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            _body(response)
        reset_queries()  # each request starts by emptying the query log: count from an empty one too
        with CaptureQueriesContext(connection) as captured:
            size = len(_body(client.get(path)))
        queries = len(captured)  # now: the next request empties the log this reads
        cpu, wall = [], []
        pg_before = _backend_cpu_s(backend)
        for _ in range(repeat):
            if rows_rebuilt:
                _forget_rows()
            c0, w0 = time.process_time(), time.perf_counter()
            _body(client.get(path))
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
        pg_after = _backend_cpu_s(backend)
        cpu.sort()
        rows.append(
            {
                "page": name,
                "path": path,
                "queries": queries,
                "bytes": size,
                "cpu_median_ms": round(statistics.median(cpu), 2),
                "cpu_p95_ms": round(cpu[min(len(cpu) - 1, int(0.95 * len(cpu)))], 2),
                "wall_median_ms": round(statistics.median(wall), 2),
                "postgres_cpu_mean_ms": round((pg_after - pg_before) * 1000 / repeat, 2)
                if pg_before is not None and pg_after is not None
                else None,
            }
        )
        r = rows[-1]
        print(
            f"  {name:30s} {r['queries']:3d} queries  CPU median {r['cpu_median_ms']:8.2f} ms  "
            f"p95 {r['cpu_p95_ms']:8.2f} ms  PostgreSQL {r['postgres_cpu_mean_ms']} ms  {r['bytes']} bytes",
            flush=True,
        )
    return rows


def record_cost(repeat: int = 5) -> list[dict]:
    """Queries and CPU of recording one result (``result_record``) for an attempt of the smallest and of the largest
    demo run, its stored result taken away first; each time inside a transaction rolled back, so the data stay as
    seeded."""
    from django.db import connection, transaction
    from django.db.models import Count, Exists, OuterRef
    from django.test.utils import CaptureQueriesContext

    from django.utils import timezone

    from leaderboard.models import ModelRun, Result, Submission
    from leaderboard.rankings.services import run_score_refresh_stale
    from leaderboard.submissions.results import result_record

    class Rollback(Exception):
        pass

    passed = Result.objects.filter(submission__model_run=OuterRef("pk"), verdict="passed")
    runs = ModelRun.objects.filter(Exists(passed), is_demo=True).annotate(n=Count("attempts"))
    out = []
    for run in (runs.order_by("n", "id").first(), runs.order_by("-n", "id").first()):
        attempt = Submission.objects.filter(model_run=run, result__verdict="passed").order_by("id").first()
        document = attempt.result.document
        queries, cpu = [], []
        for _ in range(repeat):
            try:
                with transaction.atomic():
                    Result.objects.filter(submission=attempt).delete()
                    Submission.objects.filter(pk=attempt.pk).update(state=Submission.State.RUNNING, verdict=None)
                    with CaptureQueriesContext(connection) as captured:
                        c0 = time.process_time()
                        result_record(submission_id=attempt.pk, document=document)
                        cpu.append((time.process_time() - c0) * 1000)
                    queries.append(len(captured))
                    raise Rollback
            except Rollback:
                pass
        # The web worker's job that scores the run, once per batch of results (``run_score_refresh_stale``).
        job_queries, job_cpu = [], []
        for _ in range(repeat):
            try:
                with transaction.atomic():
                    ModelRun.objects.filter(pk=run.pk).update(score_stale_since=timezone.now())
                    with CaptureQueriesContext(connection) as captured:
                        c0 = time.process_time()
                        run_score_refresh_stale(model_run_id=run.pk)
                        job_cpu.append((time.process_time() - c0) * 1000)
                    job_queries.append(len(captured))
                    raise Rollback
            except Rollback:
                pass
        out.append(
            {
                "run_attempts": run.n,
                "queries": max(queries),
                "cpu_median_ms": round(statistics.median(cpu), 2),
                "scoring_job_queries": max(job_queries),
                "scoring_job_cpu_median_ms": round(statistics.median(job_cpu), 2),
            }
        )
        print(f"  recording one result of a run of {out[-1]['run_attempts']} attempts: {out[-1]}", flush=True)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def under_load(pages: list[tuple[str, str]], concurrency: int, seconds: float, workers: int) -> dict:
    port = _free_port()
    env = dict(os.environ, ALLOWED_HOSTS="127.0.0.1,localhost")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/runs/", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("ranking_pages: gunicorn did not start") from None
                time.sleep(0.3)
        latencies: list[float] = []
        errors = [0]
        lock = threading.Lock()
        stop = time.monotonic() + seconds

        def reader(offset: int) -> None:
            i = offset
            while time.monotonic() < stop:
                path = pages[i % len(pages)][1]
                i += 1
                start = time.perf_counter()
                try:
                    urllib.request.urlopen(base + path, timeout=30).read()
                except OSError:
                    with lock:
                        errors[0] += 1
                    continue
                with lock:
                    latencies.append((time.perf_counter() - start) * 1000)

        threads = [threading.Thread(target=reader, args=(n,)) for n in range(concurrency)]
        began = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - began
    finally:
        server.terminate()
        server.wait(timeout=30)
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) if latencies else float("nan")

    result = {
        "gunicorn_workers": workers,
        "client_threads": concurrency,
        "seconds": round(elapsed, 1),
        "requests": len(latencies),
        "errors": errors[0],
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
    }
    print(f"  under load: {result}", flush=True)
    return result


def measure_here(args: argparse.Namespace) -> dict:
    """Everything measured on the database of DATABASE_URL (this process's)."""
    import django

    django.setup()
    from django.db import connection

    from leaderboard.models import ModelRun, Submission

    data = {
        "model_runs": ModelRun.objects.count(),
        "submissions": Submission.objects.count(),
        "attempts": Submission.objects.filter(model_run__isnull=False).count(),
    }
    pages = _pages()
    load_before = [round(x, 2) for x in os.getloadavg()]
    print(f"database: {connection.vendor} {connection.settings_dict.get('NAME')}: {data}", flush=True)
    rows = in_process(pages, args.repeat, args.rows_rebuilt)
    recording = record_cost()
    load = under_load(pages, args.concurrency, args.seconds, args.workers) if args.concurrency > 0 else None
    with connection.cursor() as cursor:
        cursor.execute("select version()" if connection.vendor == "postgresql" else "select sqlite_version()")
        db_version = cursor.fetchone()[0]
    return {
        "database": connection.settings_dict.get("NAME"),
        "data": data,
        "pages": rows,
        "recording": recording,
        "under_load": load,
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "database": f"{connection.vendor}: {db_version}",
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
    }


def _growth(first: dict, last: dict) -> list[dict]:
    out = []
    for a, b in zip(first["pages"], last["pages"]):
        out.append(
            {
                "page": a["page"],
                "queries": [a["queries"], b["queries"]],
                "cpu_median_ms": [a["cpu_median_ms"], b["cpu_median_ms"]],
                "cpu_ratio": round(b["cpu_median_ms"] / a["cpu_median_ms"], 2) if a["cpu_median_ms"] else None,
                "bytes": [a["bytes"], b["bytes"]],
            }
        )
    return out


def write_report(out: Path, command: str, sizes: dict[str, dict], seeded_with: str, label: str = "") -> Path:
    today = date.today().isoformat()
    stem = f"ranking_pages_{today}" + (f"_{label}" if label else "")
    labels = list(sizes)
    first = sizes[labels[0]]
    report = {
        "date": today,
        "command": command,
        "seeded_with": seeded_with,
        "sizes": sizes,
        "growth": _growth(first, sizes[labels[-1]]) if len(labels) > 1 else None,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    env = first["environment"]
    lines = [
        f"# Ranking pages rendered uncached on seeded databases — {today}",
        "",
        f"Command: `{command}`",
        "",
        f"Databases seeded with: {seeded_with}.",
        "",
        f"Environment: Python {env['python']}, {env['cpus']} CPUs, {env['database'].split(' on ')[0]}, DEBUG "
        f"off, page cache off (every request renders its page). Load average before/after: "
        + "; ".join(
            f"{label} {s['environment']['load_average_before'][0]}/{s['environment']['load_average_after'][0]}"
            for label, s in sizes.items()
        )
        + " (the machine was shared with other work).",
        "",
    ]
    for label, s in sizes.items():
        d = s["data"]
        lines += [
            f"## {label}: {d['model_runs']} model runs, {d['attempts']} attempts ({d['submissions']} submissions)",
            "",
            "CPU of the Django process per request (median and p95 of the repeats), the PostgreSQL backend's "
            "CPU per request (mean), queries and bytes of one request:",
            "",
            "| page | path | queries | CPU median ms | CPU p95 ms | PostgreSQL CPU ms | bytes |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['page']} | `{r['path']}` | {r['queries']} | {r['cpu_median_ms']} | {r['cpu_p95_ms']} | "
            f"{r['postgres_cpu_mean_ms']} | {r['bytes']} |"
            for r in s["pages"]
        ]
        lines += (
            [""]
            + [
                f"Recording one result (`result_record`) of a run of {rec['run_attempts']} attempts: "
                f"{rec['queries']} queries, {rec['cpu_median_ms']} ms of CPU (median of 5); the web "
                f"worker's job that then scores the run, once per batch of results: "
                f"{rec.get('scoring_job_queries')} queries, {rec.get('scoring_job_cpu_median_ms')} ms of "
                f"CPU."
                for rec in s["recording"]
            ]
            + [""]
        )
        over = [r["page"] for r in s["pages"] if r["cpu_median_ms"] > TARGET_CPU_MS]
        lines += [
            f"Pages over the target of {TARGET_CPU_MS:g} ms of CPU per uncached render (median): "
            + (", ".join(over) if over else "none")
            + ".",
            "",
        ]
        if s.get("under_load"):
            load = s["under_load"]
            lines += [
                f"Under load: gunicorn with {load['gunicorn_workers']} workers, {load['client_threads']} "
                f"client threads: {load['requests_per_s']} requests/s, {load['errors']} errors, p50 "
                f"{load['p50_ms']} ms, p95 {load['p95_ms']} ms, p99 {load['p99_ms']} ms.",
                "",
            ]
    if report["growth"]:
        lines += [
            f"## Growth from {labels[0]} to {labels[-1]}",
            "",
            "| page | queries | CPU median ms | ratio | bytes |",
            "|---|---|---|---:|---|",
        ]
        lines += [
            f"| {g['page']} | {g['queries'][0]} → {g['queries'][1]} | {g['cpu_median_ms'][0]} → "
            f"{g['cpu_median_ms'][1]} | {g['cpu_ratio']} | {g['bytes'][0]} → {g['bytes'][1]} |"
            for g in report["growth"]
        ]
    path = out / f"{stem}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="LABEL=URL",
        help="a seeded database to measure (repeat, smallest first); default: DATABASE_URL",
    )
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=0, help="client threads under load; 0 skips it")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--seeded-with", default="python manage.py seed_demo --runs 100 --problems 60 --attempts 3")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--label", default="", help="added to the file names: ranking_pages_<date>_<label>")
    parser.add_argument(
        "--rows-rebuilt",
        action="store_true",
        help="drop the rows kept once built (leaderboard/rankings/memo.py) before every measured request: each render "
        "builds every row, as after every run on the page changed (by default a repeated render reuses them, as "
        "after one result)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # measure DATABASE_URL, write the JSON here
    args = parser.parse_args(argv)
    if args.child:
        Path(args.child).write_text(json.dumps(measure_here(args)))
        return 0
    command = "python benchmarks/ranking_pages.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    targets = [d.split("=", 1) for d in args.db] or [["here", os.environ.get("DATABASE_URL", "")]]
    sizes = {}
    for label, url in targets:
        print(f"{label}: {url}", flush=True)
        out = Path(f"/tmp/ranking_pages_{os.getpid()}_{label}.json")
        child = [
            sys.executable,
            __file__,
            "--child",
            str(out),
            "--repeat",
            str(args.repeat),
            "--concurrency",
            str(args.concurrency),
            "--seconds",
            str(args.seconds),
            "--workers",
            str(args.workers),
            *(["--rows-rebuilt"] if args.rows_rebuilt else []),
        ]
        env = dict(os.environ, **({"DATABASE_URL": url} if url else {}))
        subprocess.run(child, env=env, check=True)
        sizes[label] = json.loads(out.read_text())
        out.unlink()
    path = write_report(Path(args.out), command, sizes, args.seeded_with, args.label)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
