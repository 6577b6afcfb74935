"""`arena submit`: send a solution or a model run to a portal and follow it to the end."""

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


def _print_run(run: dict[str, Any]) -> None:
    """A finished model run's scores, always with the protocol they were obtained with. On a CPU profile (the
    scores' ``timed`` is false) fast_p@k, speedups and roofline fractions are not computed, and said so, as the
    run's page says."""
    scores = run.get("scores") or {}
    k = scores.get("scored_at_k")

    def pct(value: Any) -> str:
        return "—" if value is None else f"{100 * value:.1f} %"

    print(f"protocol: {(run.get('protocol') or {}).get('label', '?')}")
    passed = f"  pass@{k} {pct(scores.get('pass_at_k'))}   pass@1 {pct(scores.get('pass_at_1'))}"
    if scores.get("timed", True) is False:
        print(passed + f"   coverage {pct(scores.get('coverage'))}")
        print(
            f"  fast_p@{k}, speedups and roofline fractions: not computed on {run.get('profile', 'a CPU profile')} "
            f"(CPU timings only check the pipeline)"
        )
    else:
        fast = scores.get("fast_p_at_k") or {}
        print(passed + "   " + "   ".join(f"fast_{p}@{k} {pct(v)}" for p, v in fast.items()))
        speedup = scores.get("geomean_speedup")
        print(
            f"  geomean speedup {'—' if speedup is None else f'{speedup:.3f}x'}   mean roofline fraction "
            f"{pct(scores.get('mean_roofline_fraction'))}   coverage {pct(scores.get('coverage'))}"
        )
    if run.get("url"):
        print(f"  {run['url']}")


def cmd_submit(args: argparse.Namespace) -> int:
    portal = resolve_portal(args.portal)
    args.token = resolve_token(args.token)
    if not args.token:
        print(
            "arena submit: no API token: run `arena login`, set ARENA_TOKEN or pass --token "
            f"(make one on {portal}/accounts/token/)",
            file=sys.stderr,
        )
        return 2
    if args.model_run:
        from evaluator.multipart import encode

        body, ctype = encode({}, {"archive": Path(args.model_run)})
        created = request(f"{portal}/api/model-runs/", args.token, body, ctype)
        url = created.get("url") or f"{portal}/runs/{created['id']}/"
        print(
            f"model run {created['id']} accepted: {created.get('attempts_total', '?')} attempts queued: {url}",
            flush=True,
        )
        if args.no_follow:
            return 0
        profile = str(created.get("profile") or "")
        if profile and created.get("state") != states.FINISHED and live_workers(portal, profile) == 0:
            print(
                unserved_notice(
                    portal, profile, "model run", on_cpu='try it on CPU with "hardware": "cpu-gloo-2" in its manifest'
                ),
                file=sys.stderr,
                flush=True,
            )
            if not args.wait:
                print(
                    f"arena: not waiting for a worker that is not there; follow it on {url}, or submit with --wait "
                    f"to wait here (up to --timeout seconds)",
                    file=sys.stderr,
                )
                return 3
        seen: list[Any] = [None]

        def progress(d: dict[str, Any]) -> None:
            done = (d.get("attempts_done"), d.get("attempts_total"))
            if not args.json and done != seen[0]:
                seen[0] = done
                print(f"model run {d['id']}: {done[0]}/{done[1]} attempts done", flush=True)

        final = follow(
            f"{portal}/api/model-runs/{created['id']}/",
            args.token,
            lambda d: d.get("state") == states.FINISHED,
            args.timeout,
            progress,
        )
        if args.json:
            print(json.dumps(final, indent=2))
        else:
            _print_run(final)
        return 0 if final.get("state") == states.FINISHED else 1
    if not (args.problem and args.solution):
        print("arena: submit needs --problem and --solution, or --model-run ARCHIVE", file=sys.stderr)
        return 2
    path = Path(args.solution)
    if not path.is_file():
        print(f"arena: no such solution file: {path}", file=sys.stderr)
        return 2
    unserved = live_workers(portal, args.hardware) == 0
    if unserved:
        print(unserved_notice(portal, args.hardware, "submission"), file=sys.stderr, flush=True)
    payload = json.dumps(
        {"problem": args.problem, "profile": args.hardware, "filename": path.name, "source": path.read_text()}
    ).encode()
    created = request(f"{portal}/api/submissions/", args.token, payload, "application/json")
    url = created.get("url") or f"{portal}/submissions/{created['id']}/"
    print(f"submission {created['id']} queued on {args.hardware}: {url}", flush=True)
    if args.no_follow:
        return 0
    if unserved and not args.wait:
        print(
            f"arena: not waiting for a worker that is not there; follow it on {url}, or submit with --wait to "
            f"wait here (up to --timeout seconds)",
            file=sys.stderr,
        )
        return 3
    seen: list[Any] = [None]

    def progress(d: dict[str, Any]) -> None:
        if not args.json and d.get("state") != seen[0]:
            seen[0] = d.get("state")
            print(f"submission {d.get('id', created['id'])}: {seen[0]}", flush=True)

    final = follow(
        f"{portal}/api/submissions/{created['id']}/",
        args.token,
        lambda d: d.get("state") in states.FINAL_STATES,
        args.timeout,
        progress,
    )
    if args.json:
        print(json.dumps(final, indent=2))
    else:
        print(f"state: {final.get('state')}  verdict: {final.get('verdict')}")
        if final.get("result"):
            print_result(final["result"])
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    sb = sub.add_parser("submit", help="send a solution or a model run to a portal and follow it to the end")
    sb.add_argument(
        "--portal",
        default=None,
        help="the portal (default: $ARENA_PORTAL, else the one `arena login` saved, else http://127.0.0.1:8000)",
    )
    sb.add_argument(
        "--token",
        default=None,
        help="API token from your account page (default: $ARENA_TOKEN, else the one `arena login` saved)",
    )
    sb.add_argument("--problem")
    sb.add_argument("--solution")
    sb.add_argument("--hardware", default=DEFAULT_PROFILE, choices=sorted(PROFILES))
    sb.add_argument("--model-run", help="a model-run archive (.zip or .tar.gz)")
    sb.add_argument("--no-follow", action="store_true")
    sb.add_argument(
        "--wait",
        action="store_true",
        help="follow the submission or model run even when no worker serves its profile now (otherwise "
        "that is said at once and the command ends with status 3, the upload left queued)",
    )
    sb.add_argument("--timeout", type=float, default=1800)
    sb.add_argument("--json", action="store_true")
    sb.set_defaults(func=cmd_submit)
