"""`arena test`: an unranked test of a solution, on a portal or here."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from evaluator.cli.run_eval import print_result
from evaluator.cli.client import follow, request
from evaluator.contract.profiles import PROFILES


def _print_test(doc: dict[str, Any]) -> None:
    """A test's result: the verdict, each trial's failing ranks, the source lines named, quick timing as such."""
    print_result(doc)
    for trial in doc.get("trials") or []:
        for r in trial.get("ranks") or []:
            if not r.get("ok"):
                print(f"  trial {trial['trial']}, rank {r['rank']}: {r.get('error')}")
    for d in doc.get("diagnostics") or []:
        print(f"  {d['file']}:{d['line']}: {d['kind']}: {d.get('text', '')}")
    note = (doc.get("test") or {}).get("note")
    if note:
        print(f"({note})")


def cmd_test(args: argparse.Namespace) -> int:
    """An unranked test: on a portal (``--token``: ``POST /api/tests/``, the profile's fast lane) or, without a
    token, here, through the same evaluator with the same reduced trials and quick timing."""
    from evaluator.contract import testmode

    path = Path(args.solution)
    if not path.is_file():
        print(f"arena: no such solution file: {path}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("ARENA_TOKEN", "")
    if token:
        portal = args.portal.rstrip("/")
        payload = json.dumps({"problem": args.problem, "profile": args.hardware, "filename": path.name,
                              "source": path.read_text(), "timing": args.timing}).encode()
        created = request(f"{portal}/api/tests/", token, payload, "application/json")
        if not args.json:
            print(f"test {created['id']} queued on {args.hardware} (unranked)", flush=True)
        final = created if args.no_follow else follow(created["api_url"], token,
                                                       lambda d: d.get("state") == "finished", args.timeout)
        if args.json:
            print(json.dumps(final, indent=2))
        elif final.get("result"):
            _print_test(final["result"])
        else:
            print(f"state: {final.get('state')}")
        return 0
    from evaluator.host.evaluate import evaluate

    try:
        spec = testmode.test_spec(problem_id=args.problem, source=path.read_text(), profile=args.hardware,
                                  device=PROFILES[args.hardware].device, solution_name=path.name, timing=args.timing)
        doc = testmode.annotate(evaluate(spec), spec)
    except ValueError as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        _print_test(doc)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    ts = sub.add_parser("test", help="an unranked test of a solution: on a portal with --token, else here")
    ts.add_argument("--problem", required=True, help="problem id, e.g. collectives/all_reduce")
    ts.add_argument("--solution", required=True, help="path to the solution .py file")
    ts.add_argument("--hardware", default="cpu-gloo-2", choices=sorted(PROFILES), help="hardware profile")
    ts.add_argument("--timing", action="store_true", help="quick timing (fewer iterations; marked as such)")
    ts.add_argument("--portal", default=os.environ.get("ARENA_PORTAL", "http://127.0.0.1:8000"))
    ts.add_argument("--token", default=None, help="API token (or ARENA_TOKEN); without one the test runs here")
    ts.add_argument("--no-follow", action="store_true")
    ts.add_argument("--timeout", type=float, default=900)
    ts.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    ts.set_defaults(func=cmd_test)
