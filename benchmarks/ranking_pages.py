"""Times the ranking pages on a database filled by ``seed_demo`` and writes a dated results file.

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/arena_demo
    DEBUG=1 python manage.py migrate && DEBUG=1 python manage.py load_problems
    DEBUG=1 python manage.py seed_demo --runs 100 --problems 60 --attempts 3
    python benchmarks/ranking_pages.py [--repeat 30] [--concurrency 32] [--seconds 10] [--out benchmarks/results]

Two measurements:

1. **In process** (Django's test client, no network): for each page, the number of SQL queries and the median
   and 95th-percentile time over ``--repeat`` requests after three warm-up requests. This is the server's own
   cost per page, and the query count shows it does not grow with the data.
2. **Under load** (``--concurrency N``, 0 to skip): gunicorn with ``--workers`` processes serving the same
   database on a local port, and N client threads requesting the pages in turn for ``--seconds``; reports
   requests per second and latency percentiles. A reader who opens a page every 10 s makes 0.1 requests/s, so
   R requests/s serve about 10·R readers.

The results go to ``OUT/ranking_pages_<date>.json`` and ``.md``, with the command that produced them.
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


def _pages() -> list[tuple[str, str]]:
    """(name, path) of every page measured, picked from the seeded data."""
    from leaderboard.models import ModelRun, Problem

    runs = list(ModelRun.objects.filter(is_demo=True).order_by("id").values_list("id", "profile")[:2])
    if len(runs) < 2:
        raise SystemExit("ranking_pages: no demo runs here; run `python manage.py seed_demo --runs 100 "
                         "--problems 60 --attempts 3` first (with the same DATABASE_URL).")
    (a, profile), (b, _) = runs
    problem = Problem.objects.filter(suite="demo").order_by("id").values_list("id", flat=True).first()
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username__startswith="demo-user-").order_by("username").first()
    return [
        ("ranking", "/runs/"),
        ("ranking, filtered and sorted", f"/runs/?profile={profile}&mode=agentic&sort=-fast_2"),
        ("ranking, page 2", "/runs/?per_page=25&page=2"),
        ("ranking CSV export", "/runs/?format=csv"),
        ("model run page", f"/runs/{a}/"),
        ("model run attempts JSON", f"/runs/{a}/?format=json&table=attempts"),
        ("comparison", f"/runs/compare/?a={a}&b={b}"),
        ("problem page", f"/problems/{problem}/?profile={profile}"),
        ("user page", f"/users/{user.username}/"),
        ("API ranking", "/api/rankings/model-runs/"),
        ("API model run", f"/api/model-runs/{a}/"),
    ]


def in_process(pages: list[tuple[str, str]], repeat: int) -> list[dict]:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    rows = []
    for name, path in pages:
        for _ in range(3):
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
        reset_queries()  # each request starts by resetting the log; start the count from an empty one too
        with CaptureQueriesContext(connection) as captured:
            client.get(path)
        queries = len(captured)  # now: the next request empties the log this reads
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            response = client.get(path)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        rows.append({"page": name, "path": path, "queries": queries, "bytes": len(response.content),
                     "median_ms": round(statistics.median(times), 2),
                     "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2)})
        print(f"  {name:32s} {rows[-1]['queries']:3d} queries  median {rows[-1]['median_ms']:7.2f} ms  "
              f"p95 {rows[-1]['p95_ms']:7.2f} ms", flush=True)
    return rows


def per_request_alternative(repeat: int) -> dict:
    """What the ranking would cost without the precomputed RunScore rows: every run's attempts in one aggregated
    query, scored per request with leaderboard.metrics (the pass@1 column would double it)."""
    from collections import defaultdict

    from leaderboard import metrics, selectors
    from leaderboard.models import ModelRun, Submission

    times = []
    for _ in range(max(3, repeat // 5)):
        start = time.perf_counter()
        runs = {r.pk: r for r in ModelRun.objects.all()}
        grouped: dict[int, list] = defaultdict(list)
        for run_id, *row in (Submission.objects.filter(model_run__isnull=False)
                             .values_list("model_run_id", "pk", "problem_id", "problem__title", "problem__category",
                                          "attempt", "state", "verdict", "result__speedup",
                                          "result__roofline_fraction", "result__solution_median_us",
                                          "result__baseline_median_us").iterator(chunk_size=5000)):
            grouped[run_id].append(selectors.AttemptRow(*row))
        suites = {}
        for run_id, attempts in grouped.items():
            run = runs[run_id]
            key = (run.suite, run.profile)
            if key not in suites:
                suites[key] = selectors.model_run_suite(run=run)
            metrics.score_run(selectors.attempts_for_scoring(attempts), selectors.model_run_protocol(run=run),
                              suite=suites[key])
        times.append((time.perf_counter() - start) * 1000)
    result = {"runs": len(grouped), "median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1)}
    print(f"  scoring every run per request instead (not what the site does): {result}", flush=True)
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def under_load(pages: list[tuple[str, str]], concurrency: int, seconds: float, workers: int) -> dict:
    port = _free_port()
    env = dict(os.environ, ALLOWED_HOSTS="127.0.0.1,localhost")
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "portal.wsgi", "-b", f"127.0.0.1:{port}",
                               "-w", str(workers), "--log-level", "warning"], cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/runs/", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("ranking_pages: gunicorn did not start")
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

    result = {"gunicorn_workers": workers, "client_threads": concurrency, "seconds": round(elapsed, 1),
              "requests": len(latencies), "errors": errors[0],
              "requests_per_s": round(len(latencies) / elapsed, 1), "p50_ms": pct(0.5), "p95_ms": pct(0.95),
              "p99_ms": pct(0.99)}
    print(f"  under load: {result}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=32, help="client threads under load; 0 skips it")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.db import connection

    from leaderboard.models import ModelRun, Submission

    data = {"model_runs": ModelRun.objects.count(), "submissions": Submission.objects.count(),
            "attempts": Submission.objects.filter(model_run__isnull=False).count()}
    pages = _pages()
    load_before = [round(x, 2) for x in os.getloadavg()]
    print(f"database: {connection.vendor} {connection.settings_dict.get('NAME')}: {data}", flush=True)
    rows = in_process(pages, args.repeat)
    alternative = per_request_alternative(args.repeat)
    load = under_load(pages, args.concurrency, args.seconds, args.workers) if args.concurrency > 0 else None

    with connection.cursor() as cursor:
        cursor.execute("select version()" if connection.vendor == "postgresql" else "select sqlite_version()")
        db_version = cursor.fetchone()[0]
    today = date.today().isoformat()
    command = "python benchmarks/ranking_pages.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    report = {"date": today, "command": command,
              "seeded_with": "python manage.py seed_demo --runs 100 --problems 60 --attempts 3",
              "environment": {"python": platform.python_version(), "machine": platform.machine(),
                              "cpus": os.cpu_count(), "database": f"{connection.vendor}: {db_version}",
                              "load_average_before": load_before,
                              "load_average_after": [round(x, 2) for x in os.getloadavg()]},
              "data": data, "pages": rows, "scoring_per_request_instead": alternative, "under_load": load}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"ranking_pages_{today}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [f"# Ranking pages on a seeded database — {today}", "",
             f"Command: `{command}` (database seeded with `{report['seeded_with']}`).", "",
             f"Environment: Python {report['environment']['python']}, {report['environment']['cpus']} CPUs, "
             f"{report['environment']['database'].split(' on ')[0]}; load average {load_before[0]} before and "
             f"{report['environment']['load_average_after'][0]} after (the machine was shared with other work; "
             f"the client threads of the load test run on the same CPUs as the server).", "",
             f"Data: {data['model_runs']} model runs, {data['attempts']} attempts, {data['submissions']} "
             f"submissions in all.", "",
             "In process (Django test client, no network; the server's own cost):", "",
             "| page | path | queries | median ms | p95 ms | bytes |", "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {r['page']} | `{r['path']}` | {r['queries']} | {r['median_ms']} | {r['p95_ms']} | {r['bytes']} |"
              for r in rows]
    lines += ["", f"Why RunScore rows: scoring all {alternative['runs']} runs per request instead (their attempts in one "
                  f"aggregated query, then leaderboard.metrics) takes {alternative['median_ms']} ms (median; min "
                  f"{alternative['min_ms']} ms) before any rendering, against the ranking page's whole time above; "
                  f"with RunScore the ranking reads one row per run and its cost does not grow with attempts."]
    if load:
        lines += ["", f"Under load: gunicorn with {load['gunicorn_workers']} workers, {load['client_threads']} "
                      f"client threads requesting the pages above in turn for {load['seconds']} s: "
                      f"**{load['requests_per_s']} requests/s** ({load['requests']} requests, {load['errors']} "
                      f"errors), latency p50 {load['p50_ms']} ms, p95 {load['p95_ms']} ms, p99 {load['p99_ms']} ms. "
                      f"At one page per reader every 10 s that serves about "
                      f"{int(load['requests_per_s'] * 10)} readers at once."]
    (out / f"ranking_pages_{today}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / f'ranking_pages_{today}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
