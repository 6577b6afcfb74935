"""`arena test`: an unranked test of a solution, on a portal or here."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluator.cli.run_eval import print_result
from evaluator.cli.client import follow, live_workers, request, resolve_portal, resolve_token, unserved_notice
from evaluator.contract import states
from evaluator.contract.profiles import DEFAULT_PROFILE, PROFILES


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
    """An unranked test: on a portal (with a token from --token, ARENA_TOKEN or ``arena login``: ``POST
    /api/tests/``, the profile's fast lane) or, with ``--local`` or no token at all, here, through the same
    evaluator with the same reduced trials and quick timing; which of the two is always said."""
    from evaluator.contract import testmode

    path = Path(args.solution)
    if not path.is_file():
        print(f"arena: no such solution file: {path}", file=sys.stderr)
        return 2
    token = "" if args.local else resolve_token(args.token)
    portal = resolve_portal(args.portal)
    if token:
        from evaluator.multipart import encode

        # The file as it is (multipart): one that is not even UTF-8 text still gets its test result.
        body, ctype = encode(
            {"problem": args.problem, "profile": args.hardware, "timing": "true" if args.timing else "false"},
            {"file": path},
        )
        created = request(f"{portal}/api/tests/", token, body, ctype)
        if not args.json:
            print(
                f"test {created['id']} {created.get('state', 'queued')} on {args.hardware} at {portal} (unranked)",
                flush=True,
            )
        if created.get("state") != states.FINISHED and live_workers(portal, args.hardware) == 0:
            print(unserved_notice(portal, args.hardware, "test"), file=sys.stderr, flush=True)
            if not args.wait and not args.no_follow:
                print(
                    f"arena: not waiting for a worker that is not there; follow it on {created['api_url']}, or "
                    f"pass --wait, or --local to test here",
                    file=sys.stderr,
                )
                return 3
        final = (
            created
            if args.no_follow
            else follow(created["api_url"], token, lambda d: d.get("state") == states.FINISHED, args.timeout)
        )
        if args.json:
            print(json.dumps(final, indent=2))
        elif final.get("result"):
            _print_test(final["result"])
        else:
            print(f"state: {final.get('state')}")
        return 0
    why = "--local" if args.local else "no API token (--token, ARENA_TOKEN or `arena login`)"
    print(f"arena test: {why}: testing here, on this machine, not on {portal}", file=sys.stderr, flush=True)
    from evaluator.cli.run_eval import missing_gpus
    from evaluator.suites.installed import evaluate  # resolves the spec, dispatches it to the host or to its suite

    why = missing_gpus(args.hardware)
    if why:
        print(f"arena test: {why}", file=sys.stderr)
        return 2
    try:
        spec = testmode.test_spec(
            problem_id=args.problem,
            source=path.read_text(),
            profile=args.hardware,
            device=PROFILES[args.hardware].device,
            solution_name=path.name,
            timing=args.timing,
        )
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
    ts = sub.add_parser(
        "test",
        help="an unranked test of a solution: on the portal when you have a token "
        "(--token, ARENA_TOKEN or `arena login`), else here (said so)",
    )
    ts.add_argument("--problem", required=True, help="problem id, e.g. collectives/all_reduce")
    ts.add_argument("--solution", required=True, help="path to the solution .py file")
    ts.add_argument("--hardware", default=DEFAULT_PROFILE, choices=sorted(PROFILES), help="hardware profile")
    ts.add_argument("--timing", action="store_true", help="quick timing (fewer iterations; marked as such)")
    ts.add_argument(
        "--portal",
        default=None,
        help="the portal (default: $ARENA_PORTAL, else the one `arena login` saved, else http://127.0.0.1:8000)",
    )
    ts.add_argument(
        "--token",
        default=None,
        help="API token (default: $ARENA_TOKEN, else the one `arena login` saved); with none, the test runs here",
    )
    ts.add_argument("--local", action="store_true", help="test here, on this machine, even with a token")
    ts.add_argument("--no-follow", action="store_true")
    ts.add_argument(
        "--wait",
        action="store_true",
        help="follow the test even when no worker serves its profile now (otherwise that is said at "
        "once and the command ends with status 3)",
    )
    ts.add_argument("--timeout", type=float, default=900)
    ts.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    ts.set_defaults(func=cmd_test)
