"""How PostgreSQL reads a page of the ranking of runs under each order it offers, with and without filters: EXPLAIN
(ANALYZE, BUFFERS) of the query that picks a page's runs, on a database filled by ``seed_demo``; writes a dated
results file.

    python benchmarks/ranking_plans.py --db postgres://postgres@127.0.0.1:5432/arena_demo_1000 \
        [--filters "" "profile=cpu-gloo-4&mode=agentic" ...] [--label NAME] [--out benchmarks/results]

For each set of filters (a query string of the ranking) and each sortable column both ways: the page's runs (50,
ranked) as ``model_run_ranking`` reads them, and the table of runs listed apart (20, its default order). Each line
gives the execution time (the fastest of three), the rows the plan's scans read (what a row filter removed
included), the buffers, its sort steps ("Sort": every kept run sorted; "Incremental Sort": only runs equal on the
index's columns) and the scans with their index.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("DEBUG", "1")  # (only queries are built here; nothing is served)


def _walk(node: dict[str, Any], kinds: list[str], scans: list[tuple[str, str, float]]) -> None:
    if node["Node Type"] in ("Sort", "Incremental Sort"):
        kinds.append(node["Node Type"])
    if "Scan" in node["Node Type"]:
        loops = node["Actual Loops"]
        read = (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * loops
        scans.append((node["Node Type"], node.get("Index Name") or node.get("Relation Name") or "", read))
    for child in node.get("Plans", []):
        _walk(child, kinds, scans)


def explain(queryset: Any, limit: int) -> dict[str, Any]:
    from django.db import connection

    sql, params = queryset.values_list("pk")[:limit].query.sql_with_params()
    best: dict[str, Any] | None = None
    with connection.cursor() as cursor:
        for _ in range(3):
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            plan = plan[0] if isinstance(plan, list) else plan
            if best is None or plan["Execution Time"] < best["Execution Time"]:
                best = plan
    assert best is not None
    kinds: list[str] = []
    scans: list[tuple[str, str, float]] = []
    _walk(best["Plan"], kinds, scans)
    root = best["Plan"]
    return {
        "execution_ms": round(best["Execution Time"], 3),
        "planning_ms": round(best["Planning Time"], 3),
        "rows_read": int(sum(s[2] for s in scans)),
        "buffers": root.get("Shared Hit Blocks", 0) + root.get("Shared Read Blocks", 0),
        "sorts": kinds,
        "scans": sorted({f"{kind}: {name}" for kind, name, _ in scans}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--filters", nargs="*", default=["", "mode=agentic", "profile=cpu-gloo-4&mode=agentic"])
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    os.environ["DATABASE_URL"] = args.db
    import django

    django.setup()
    from django.http import QueryDict

    from leaderboard.models import ModelRun
    from leaderboard.rankings import run_selectors, run_tables

    command = "python benchmarks/ranking_plans.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    keys = [c.key for c in run_tables.RUN_COLUMNS if c.sortable and c.order_by]
    lines = [
        f"# How PostgreSQL reads a page of the ranking of runs — {date.today().isoformat()}",
        "",
        f"Command: `{command}`",
        "",
        f"Database `{args.db.rsplit('/', 1)[-1]}`: {ModelRun.objects.count():,} runs. Rows read: by the plan's scans "
        "(rows a filter removed included). Sort: every kept run sorted; Incremental Sort: only runs equal on the "
        "index's columns.",
        "",
        "| filters | order | execution ms | planning ms | rows read | buffers | sort steps | scans |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for filters_query in args.filters:
        filters = run_selectors.model_run_filters(QueryDict(filters_query))
        reads = []
        for key in keys:
            for sort in (f"-{key}", key):
                runs = run_selectors.model_run_ranking(filters=filters, standing=run_selectors.RANKED, sort=sort)
                reads.append((sort, explain(runs, 50)))
        apart = run_selectors.model_run_ranking(filters=filters, standing=run_selectors.UNRANKED, sort="-created")
        apart = run_tables.run_ranking_table(prefix="unranked_").order(apart, None)
        reads.append(("listed apart (default)", explain(apart, 20)))
        for sort, e in reads:
            lines.append(
                f"| `{filters_query or '-'}` | `{sort}` | {e['execution_ms']:.3f} | {e['planning_ms']:.3f} | "
                f"{e['rows_read']} | {e['buffers']} | {', '.join(e['sorts']) or 'none'} | {'; '.join(e['scans'])} |"
            )
            print(lines[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (f"ranking_plans_{date.today().isoformat()}" + (f"_{args.label}" if args.label else "") + ".md")
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
