"""Whether the pages, exports and API answers of this tree are byte for byte those of an earlier commit, on the same
seeded database: what a reader sees must not change when a page is made cheaper. Writes a dated results file.

    python benchmarks/same_pages.py --base 8f85e50 --db postgres://postgres@127.0.0.1:5432/arena_demo_1000 \
        [--label NAME] [--out benchmarks/results]

The earlier commit is written out with ``git archive`` into a temporary folder (the checkout is not touched); each
tree then answers the same requests, in a process of its own (production settings, the page cache off), through
Django's test client, and every answer (status and body) is compared. The pages are those of
``benchmarks/ranking_pages.py`` and more of each kind (other sorts, pages, users, problems, exports, the API).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Pages beyond ranking_pages.py's, picked to reach every table built in Python and every export.
MORE = [
    "/runs/?sort=-speedup&page=3",
    "/runs/?unranked_per_page=50",
    "/runs/?format=json&table=unranked",
    "/runs/?format=csv&per_page=1000",
    "/runs/?sort=model&mode=zero-shot",
    "/problems/collectives/all_reduce/",
    "/problems/{problem2}/?profile={gpu}&sort=-speedup",
    "/problems/{problem}/?profile={gpu}&format=json",
    "/problems/{problem}/?profile={gpu}&revision=none",
    "/problems/{problem}/?profile={gpu}&version=1&revision=8",
    "/problems/{problem}/?profile={gpu}&published=1",
    "/problems/{problem2}/?profile=cpu-gloo-2",
    "/api/problems/{problem}/ranking/?profile={gpu}&page=2&page_size=5",
    "/runs/?precision=bf16&k=3&sort=-speedup",
    "/runs/?profile={gpu}&unranked_sort=model",
    "/users/{user}/?format=csv",
    "/users/{user}/?format=json&page=2&per_page=10",
    "/users/{user2}/?sol_sort=-speedup",
    "/users/{user2}/?format=csv",
    "/api/rankings/model-runs/?page=3&sort=-fast_2",
    "/api/rankings/model-runs/?standing=unranked",
    "/api/users/{user}/",
    "/runs/{run3}/",
    "/runs/{run3}/?format=csv&table=categories",
    "/?q=all&category=collectives",
    "/?format=json",
    "/api/problems/",
    # The ranking's rank ranges and counts under every filter, alone and together (read from stored rows since pages38)
    "/runs/?published=1&sort=-fast_1",
    "/runs/?profile={gpu}&precision=bf16&mode=agentic&k=3&published=1&sort=fast_1_5",
    "/runs/?k=3&sort=-speedup&page=2&per_page=10",
    "/runs/?precision=no-such&mode=zero-shot&sort=-pass_at_k",
    "/api/rankings/model-runs/?user={user}&sort=-fast_1",
    "/api/rankings/model-runs/?user={user2}&profile={gpu}&published=1&sort=speedup",
    "/api/rankings/model-runs/?mode=zero-shot&k=3&page=2&page_size=7&sort=-fast_1_5",
    "/api/rankings/model-runs/?standing=all&sort=-speedup",
]
# Every sort the ranking offers, both ways, on a later page too (each read through an index of its order since
# pages39, where the ties are broken as the sort says): the rows and their order must not change.
_SORT_KEYS = ("id", "model", "user", "profile", "precision", "k", "pass_at_k", "pass_at_1", "fast_1", "fast_1_5")
_SORT_KEYS += ("fast_2", "speedup", "roofline", "coverage", "created", "tokens", "wall_time")
MORE += [f"/runs/?sort={way}{key}&per_page=20&page=3" for key in _SORT_KEYS for way in ("", "-")]
MORE += [f"/api/rankings/model-runs/?sort={way}{key}&page_size=10" for key in _SORT_KEYS for way in ("", "-")]
MORE += ["/runs/?mode=agentic&sort=fast_2&page=2", "/runs/?profile={gpu}&sort=-created", "/runs/?sort=-roofline&k=3"]


def _answers(out: str) -> None:
    """In this process (a tree's own): every page's status and body, to the file ``out``."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "comparison-only-" + "x" * 40)
    os.environ.setdefault("HTTPS", "0")
    os.environ["ALLOWED_HOSTS"] = "localhost,127.0.0.1,testserver"
    os.environ.setdefault("ARENA_REDIS_WITHOUT_PASSWORD", "1")
    os.environ.setdefault("ARENA_WORKER_KEYS", "bench:evaluations=" + "y" * 40)
    os.environ["ARENA_PAGE_CACHE"] = "0"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from leaderboard.models import ModelRun, Problem, ProblemStanding

    runs = list(ModelRun.objects.filter(is_demo=True).order_by("id").values_list("id", flat=True)[:4])
    problems = list(Problem.objects.filter(suite="demo").order_by("id").values_list("id", flat=True)[:2])
    users = list(
        get_user_model()
        .objects.filter(username__startswith="demo-user-")
        .order_by("username")[:2]
        .values_list("username", flat=True)
    )
    gpu = (
        ProblemStanding.objects.filter(problem_id=problems[0])
        .exclude(profile__startswith="cpu")
        .order_by("-solutions")
        .values_list("profile", flat=True)
        .first()
    )
    names = {
        "problem": problems[0],
        "problem2": problems[1],
        "gpu": gpu,
        "user": users[0],
        "user2": users[1],
        "run3": runs[3],
    }
    paths = json.loads(os.environ["SAME_PAGES_PATHS"]) + [p.format(**names) for p in MORE]
    client = Client()
    answers = []
    for path in paths:
        response = client.get(path)
        body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
        answers.append({"path": path, "status": response.status_code, "bytes": len(body), "body": body.hex()})
    Path(out).write_text(json.dumps(answers))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the earlier commit")
    parser.add_argument("--db", required=True, help="a database seeded by seed_demo (both trees read it)")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--answers", help=argparse.SUPPRESS)  # child: write this tree's answers here
    args = parser.parse_args(argv)
    if args.answers:
        _answers(args.answers)
        return 0
    command = "python benchmarks/same_pages.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    base = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.base], check=True, capture_output=True, text=True
    ).stdout.strip()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    # The pages ranking_pages.py measures, as it picks them (run there, in this tree: the same ids for both trees).
    pick = (
        "import os, sys, json; sys.path.insert(0, 'benchmarks'); import ranking_pages, django; django.setup(); "
        "print(json.dumps([p for _, p in ranking_pages._pages()]))"
    )
    env = dict(os.environ, DATABASE_URL=args.db, ARENA_PAGE_CACHE="0", DEBUG="0")
    paths = (
        subprocess.run([sys.executable, "-c", pick], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        .stdout.strip()
        .splitlines()[-1]
    )
    env["SAME_PAGES_PATHS"] = paths
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        answers = {}
        for name, where in (("base", tree), ("head", ROOT)):
            out = Path(tmp) / f"{name}.json"
            subprocess.run(  # this file in both trees' processes: the earlier tree may not have it
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--base",
                    args.base,
                    "--db",
                    args.db,
                    "--answers",
                    str(out),
                ],
                cwd=where,
                env=dict(env, PYTHONPATH=str(where)),
                check=True,
            )
            answers[name] = json.loads(out.read_text())
    rows = []
    for a, b in zip(answers["base"], answers["head"]):
        same = (a["status"], a["body"]) == (b["status"], b["body"])
        rows.append(
            {
                "path": a["path"],
                "status": [a["status"], b["status"]],
                "bytes": [a["bytes"], b["bytes"]],
                "same": same,
                "sha256": [hashlib.sha256(bytes.fromhex(x["body"])).hexdigest()[:12] for x in (a, b)],
            }
        )
    today = date.today().isoformat()
    stem = f"same_pages_{today}" + (f"_{args.label}" if args.label else "")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"date": today, "command": command, "base": base, "head": head, "database": args.db, "pages": rows}
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    same = sum(r["same"] for r in rows)
    lines = [
        f"# The same pages before and after — {today}",
        "",
        f"Command: `{command}`",
        "",
        f"Commit {base} (before) against {head} (after), on `{args.db.rsplit('/', 1)[-1]}`: {same} of {len(rows)} "
        "answers byte for byte the same.",
        "",
        "| path | status | bytes before → after | same |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{r['path']}` | {r['status'][1]} | {r['bytes'][0]} → {r['bytes'][1]} | {'yes' if r['same'] else 'NO'} |"
        for r in rows
    ]
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print(f"{same} of {len(rows)} the same; wrote {out / stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
