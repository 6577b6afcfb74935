"""The `arena` command: evaluate locally with no portal, list and check problems, submit to a portal."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Sequence

from evaluator.contract.profiles import PROFILES
from evaluator.contract.spec import EvalSpec


def _print_result(doc: dict[str, Any]) -> None:
    print(f"verdict: {doc['verdict']}")
    if doc.get("message"):
        print(f"  {doc['message']}")
    if doc.get("failed_ranks"):
        print(f"  failed ranks: {', '.join(map(str, doc['failed_ranks']))}")
    timing = doc.get("timing")
    if timing:
        b, s = timing["baseline"], timing["solution"]
        print(f"timing ({timing['method']}, {timing['iterations']} iterations):")
        print(f"  baseline  median {b['median_us']:10.2f} µs  p10 {b['p10_us']:10.2f}  p90 {b['p90_us']:10.2f}")
        print(f"  solution  median {s['median_us']:10.2f} µs  p10 {s['p10_us']:10.2f}  p90 {s['p90_us']:10.2f}")
        print(f"  speedup   {timing['speedup']:.3f} ± {timing['speedup_uncertainty']:.3f} "
              f"(95% CI {timing['speedup_ci'][0]:.3f}–{timing['speedup_ci'][1]:.3f})")
        graph = timing.get("graph") or {}
        if graph.get("baseline"):
            print(f"  graph     baseline {graph['baseline']['median_us']:.2f} µs, solution "
                  f"{graph['solution']['median_us']:.2f} µs, speedup {graph['speedup']:.3f}")
    roof = doc.get("roofline")
    if roof:
        print(f"roofline: {roof['time_us']:.2f} µs ({roof['bound']}-bound); baseline reaches "
              f"{roof['baseline_fraction']:.1%}, solution {roof['solution_fraction']:.1%}")
    if doc.get("traceback"):
        print(doc["traceback"].rstrip())


def cmd_eval(args: argparse.Namespace) -> int:
    from evaluator.host.evaluate import evaluate

    path = Path(args.solution)
    if not path.is_file():
        print(f"arena: no such solution file: {path}", file=sys.stderr)
        return 2
    spec = EvalSpec(problem_id=args.problem, solution_source=path.read_text(), profile=args.hardware,
                    solution_name=path.name, trials=args.trials, seed=args.seed,
                    measure_timing=not args.no_timing, timing_iterations=args.iterations)
    try:
        doc = evaluate(spec)
    except ValueError as exc:  # unknown problem or profile: the user's mistake, said plainly
        print(f"arena: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        _print_result(doc)
    return 0


def cmd_problems(args: argparse.Namespace) -> int:
    from problems.registry import catalogue

    for problem in catalogue().values():
        sizes = ",".join(map(str, problem.world_sizes))
        print(f"{problem.id:50s} v{problem.version}  W={sizes:8s} {problem.title}")
    return 0


def cmd_check_problem(args: argparse.Namespace) -> int:
    from evaluator.selfcheck import check

    failed = False
    for w in args.world_size:
        report = check(args.problem, w, solution_path=args.solution)
        status = "ok" if report.ok else "FAILED"
        print(f"{args.problem} W={w}: {status}")
        for e in report.errors:
            print(f"  {e}")
        failed = failed or not report.ok
    return 1 if failed else 0


def _request(url: str, token: str, data: bytes | None = None, content_type: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        raise SystemExit(f"arena: the portal refused the request ({exc.code}): {_refusal(body)}")
    except urllib.error.URLError as exc:
        raise SystemExit(f"arena: cannot reach the portal at {url}: {exc.reason}")


def _refusal(body: str) -> str:
    """The portal's refusal as lines a person reads: every message of ``errors``, or the raw body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:2000]
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, dict):
        return str(data.get("detail", body))[:2000] if isinstance(data, dict) else body[:2000]
    lines = [f"{field}: {m}" if field != "non_field_errors" else str(m)
             for field, messages in errors.items() for m in (messages if isinstance(messages, list) else [messages])]
    return "\n  " + "\n  ".join(lines)


def _follow(url: str, token: str, done: Any, timeout_s: float, progress: Any = None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        data = _request(url, token)
        if progress is not None:
            progress(data)
        if done(data) or time.monotonic() > deadline:
            return data
        time.sleep(2)


def _print_run(run: dict[str, Any]) -> None:
    """A finished model run's scores, always with the protocol they were obtained with."""
    scores = run.get("scores") or {}
    k = scores.get("scored_at_k")

    def pct(value: Any) -> str:
        return "—" if value is None else f"{100 * value:.1f} %"

    fast = scores.get("fast_p_at_k") or {}
    print(f"protocol: {(run.get('protocol') or {}).get('label', '?')}")
    print(f"  pass@{k} {pct(scores.get('pass_at_k'))}   pass@1 {pct(scores.get('pass_at_1'))}   "
          + "   ".join(f"fast_{p}@{k} {pct(v)}" for p, v in fast.items()))
    speedup = scores.get("geomean_speedup")
    print(f"  geomean speedup {'—' if speedup is None else f'{speedup:.3f}x'}   mean roofline fraction "
          f"{pct(scores.get('mean_roofline_fraction'))}   coverage {pct(scores.get('coverage'))}")
    if run.get("url"):
        print(f"  {run['url']}")


def token_path() -> Path:
    """Where ``arena login`` keeps the API token: $XDG_CONFIG_HOME/arena/token (default ~/.config/arena/token)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "arena" / "token"


def resolve_token(given: str | None) -> str:
    """The token to send: --token, else $ARENA_TOKEN, else the one ``arena login`` stored. Empty when none."""
    if given:
        return given.strip()
    if os.environ.get("ARENA_TOKEN", "").strip():
        return os.environ["ARENA_TOKEN"].strip()
    try:
        return token_path().read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def cmd_login(args: argparse.Namespace) -> int:
    """Stores an API token (from the portal's /accounts/token/ page) in token_path(), readable by you only."""
    token = (args.token or os.environ.get("ARENA_TOKEN", "")).strip()
    if not token:
        import getpass

        print(f"Paste your API token from {args.portal.rstrip('/')}/accounts/token/", file=sys.stderr)
        token = getpass.getpass("token: ").strip()
    if not token:
        print("arena login: no token given", file=sys.stderr)
        return 2
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    print(f"token saved to {path} (mode 0600); arena submit uses it when neither --token nor ARENA_TOKEN is set")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    portal = args.portal.rstrip("/")
    args.token = resolve_token(args.token)
    if not args.token:
        print("arena submit: no API token: run `arena login`, set ARENA_TOKEN or pass --token "
              f"(make one on {portal}/accounts/token/)", file=sys.stderr)
        return 2
    if args.model_run:
        from evaluator.multipart import encode

        body, ctype = encode({}, {"archive": Path(args.model_run)})
        created = _request(f"{portal}/api/model-runs/", args.token, body, ctype)
        url = created.get("url") or f"{portal}/runs/{created['id']}/"
        print(f"model run {created['id']} accepted: {created.get('attempts_total', '?')} attempts queued: {url}",
              flush=True)
        if args.no_follow:
            return 0
        seen: list[Any] = [None]

        def progress(d: dict[str, Any]) -> None:
            done = (d.get("attempts_done"), d.get("attempts_total"))
            if not args.json and done != seen[0]:
                seen[0] = done
                print(f"model run {d['id']}: {done[0]}/{done[1]} attempts done", flush=True)

        final = _follow(f"{portal}/api/model-runs/{created['id']}/", args.token,
                        lambda d: d.get("state") == "finished", args.timeout, progress)
        if args.json:
            print(json.dumps(final, indent=2))
        else:
            _print_run(final)
        return 0 if final.get("state") == "finished" else 1
    if not (args.problem and args.solution):
        print("arena: submit needs --problem and --solution, or --model-run ARCHIVE", file=sys.stderr)
        return 2
    path = Path(args.solution)
    payload = json.dumps({"problem": args.problem, "profile": args.hardware, "filename": path.name,
                          "source": path.read_text()}).encode()
    created = _request(f"{portal}/api/submissions/", args.token, payload, "application/json")
    url = created.get("url") or f"{portal}/submissions/{created['id']}/"
    print(f"submission {created['id']} queued on {args.hardware}: {url}", flush=True)
    if args.no_follow:
        return 0
    final = _follow(f"{portal}/api/submissions/{created['id']}/", args.token,
                    lambda d: d.get("state") in ("finished", "cancelled"), args.timeout)
    if args.json:
        print(json.dumps(final, indent=2))
    else:
        print(f"state: {final.get('state')}  verdict: {final.get('verdict')}")
        if final.get("result"):
            _print_result(final["result"])
    return 0


def _print_test(doc: dict[str, Any]) -> None:
    """A test's result: the verdict, each trial's failing ranks, the source lines named, quick timing as such."""
    _print_result(doc)
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
        created = _request(f"{portal}/api/tests/", token, payload, "application/json")
        if not args.json:
            print(f"test {created['id']} queued on {args.hardware} (unranked)", flush=True)
        final = created if args.no_follow else _follow(created["api_url"], token,
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


def cmd_prompts(args: argparse.Namespace) -> int:
    """A prompt pack as JSONL on stdout: one line per problem that runs on the profile (or only ``--problem``)."""
    from evaluator import prompts
    from problems.registry import catalogue

    chosen = [p for p in catalogue().values() if not args.problem or p.id in args.problem]
    try:
        rows = prompts.pack(args.backend, args.hardware, chosen)
    except ValueError as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print(f"arena: no problem runs on {args.hardware}" + (f" among {', '.join(args.problem)}" if args.problem
                                                               else ""), file=sys.stderr)
        return 2
    sys.stdout.write(prompts.jsonl(rows))
    print(f"{len(rows)} prompts, pack {rows[0]['pack_version']} ({args.backend} on {args.hardware})", file=sys.stderr)
    return 0


def cmd_import_pkb(args: argparse.Namespace) -> int:
    from evaluator.suites.pkb.importer import import_checkout

    report = import_checkout(Path(args.path), Path(args.into) if args.into else None, probe=not args.no_probe,
                             probe_profile=args.probe_profile, jobs=args.jobs)
    print(report.summary())
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="Parallel Kernel Arena: evaluate multi-GPU kernels.")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="evaluate a solution locally, no portal needed")
    ev.add_argument("--problem", required=True, help="problem id, e.g. collectives/all_reduce")
    ev.add_argument("--solution", required=True, help="path to the solution .py file")
    ev.add_argument("--hardware", default="cpu-gloo-2", choices=sorted(PROFILES), help="hardware profile")
    ev.add_argument("--trials", type=int, default=5, help="correctness trials of fresh random inputs")
    ev.add_argument("--iterations", type=int, default=None, help="timed iterations (default per profile)")
    ev.add_argument("--seed", type=int, default=None, help="pin the seeds (for reproducing a failure)")
    ev.add_argument("--no-timing", action="store_true", help="check correctness only")
    ev.add_argument("--json", action="store_true", help="print the whole result document as JSON")
    ev.set_defaults(func=cmd_eval)

    pr = sub.add_parser("problems", help="list the problem catalogue")
    pr.set_defaults(func=cmd_problems)

    ck = sub.add_parser("check-problem", help="prove a problem's reference equal to its oracle on CPU")
    ck.add_argument("problem")
    ck.add_argument("--world-size", type=int, nargs="+", default=[2, 4])
    ck.add_argument("--solution", default=None, help="check this solution file against the oracle instead")
    ck.set_defaults(func=cmd_check_problem)

    lg = sub.add_parser("login", help="save your API token in ~/.config/arena/token (mode 0600) for arena submit")
    lg.add_argument("--portal", default="http://127.0.0.1:8000")
    lg.add_argument("--token", default=None, help="the token (default: $ARENA_TOKEN, else asked for)")
    lg.set_defaults(func=cmd_login)

    sb = sub.add_parser("submit", help="send a solution or a model run to a portal and follow it to the end")
    sb.add_argument("--portal", default="http://127.0.0.1:8000")
    sb.add_argument("--token", default=None,
                    help="API token from your account page (default: $ARENA_TOKEN, else the one `arena login` saved)")
    sb.add_argument("--problem")
    sb.add_argument("--solution")
    sb.add_argument("--hardware", default="cpu-gloo-2", choices=sorted(PROFILES))
    sb.add_argument("--model-run", help="a model-run archive (.zip or .tar.gz)")
    sb.add_argument("--no-follow", action="store_true")
    sb.add_argument("--timeout", type=float, default=1800)
    sb.add_argument("--json", action="store_true")
    sb.set_defaults(func=cmd_submit)

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

    pp = sub.add_parser("prompts", help="write a prompt pack (backend × hardware, every problem) as JSONL")
    pp.add_argument("--backend", required=True, help="cuda, triton, symmetric-memory, ... (docs/backends/)")
    pp.add_argument("--hardware", default="h200-nvlink-4", choices=sorted(PROFILES), help="hardware profile")
    pp.add_argument("--problem", action="append", help="only this problem (repeatable)")
    pp.set_defaults(func=cmd_prompts)

    ip = sub.add_parser("import-pkb", help="register a ParallelKernelBench checkout's problems as a suite")
    ip.add_argument("path")
    ip.add_argument("--into", default=None, help="the suite folder to write; its name is the suite's name "
                    "(default: $ARENA_SUITES_DIR/pkb, where the catalogue finds it)")
    ip.add_argument("--no-probe", action="store_true",
                    help="skip the reference-only runs that decide randomized vs original inputs (decided at evaluation)")
    ip.add_argument("--probe-profile", default="cpu-gloo-2", choices=sorted(PROFILES),
                    help="hardware profile of those runs (default cpu-gloo-2; a GPU profile on a GPU host)")
    ip.add_argument("--jobs", type=int, default=None, help="problems probed at once (default: half the CPUs, at most 8)")
    ip.set_defaults(func=cmd_import_pkb)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader stopped reading (`arena problems | head`): end quietly, as other command-line tools do. Point
        # stdout at /dev/null so that the interpreter's last flush at exit does not fail on the closed pipe again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
