"""``arena check-problem``: what the registry's audit proves about one problem of the catalogue, on this machine's
CPU (:func:`local_check`). ``tests/problems/test_audit.py`` runs the same checks over every problem in CI; these are
the figures both use. A proposed problem's check (a contribution under review) is
:mod:`evaluator.checks.problem_check`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluator.checks.problem_check import KINDS, PRESET

MIN_ROOFLINE_US = 20.0  # shorter work cannot be timed within 1 % (docs/protocol.md)
# GPU memory per device by the profile's GPU model (H200 SXM 141 GB, H100 SXM 80 GB), in GiB as CUDA reports it.
GPU_MEMORY_GIB = {"h200": 139.8, "h100": 79.1}
# The judge keeps the warm-up's and every trial's inputs on the device, and the solution's process one more; those
# copies may take at most this share of a GPU, the rest is for outputs, intermediates and a solution's buffers.
INPUT_SHARE = 0.8


def input_copies() -> int:
    from evaluator.contract.spec import EvalSpec

    return int(EvalSpec.__dataclass_fields__["trials"].default) + 2


@dataclass(frozen=True)
class CheckLine:
    """One check of :func:`local_check`: what was checked (``reference``, ``correct/x.py``, ``bench``, ``link
    bytes``), where (a world size and node grouping, or a profile), whether it came out as it must, its verdict
    (``passed``, ``wrong_output``, ``runtime_error`` for runs; ``ok`` or ``failed`` for the others) and why."""

    what: str
    where: str
    ok: bool
    verdict: str
    detail: str


def with_small(problem: Any, overrides: dict[str, Any]) -> Any:
    """The problem with its small preset's parameters overridden (a node grouping the preset does not name)."""
    import dataclasses

    if not overrides:
        return problem
    small = problem.presets[PRESET]
    presets = {**problem.presets, PRESET: dataclasses.replace(small, params={**small.params, **overrides})}
    return dataclasses.replace(problem, presets=presets)


def check_cases(problem: Any, world_sizes: tuple[int, ...] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """(world size, small-preset overrides) the reference must be right at: every declared world size (or those of
    ``world_sizes`` it declares) with the small preset's own node grouping, and for problems that take
    ``ranks_per_node`` every other grouping a multi-node profile of that world size uses."""
    from evaluator.contract.profiles import PROFILES

    sizes = [w for w in problem.world_sizes if world_sizes is None or w in world_sizes]
    cases: list[tuple[int, dict[str, Any]]] = [(w, {}) for w in sizes]
    small = problem.presets[PRESET].params
    if "ranks_per_node" in small:
        for profile in PROFILES.values():
            w, per_node = profile.world_size, profile.ranks_per_node
            if (
                profile.nodes > 1
                and w in sizes
                and per_node != small["ranks_per_node"]
                and (w, {"ranks_per_node": per_node}) not in cases
            ):
                cases.append((w, {"ranks_per_node": per_node}))
    return cases


def describe_case(problem: Any, w: int, overrides: dict[str, Any]) -> str:
    per_node = {**problem.presets[PRESET].params, **overrides}.get("ranks_per_node")
    if per_node is None:
        return f"W={w}"
    nodes = w // per_node
    return f"W={w}, {nodes} node{'s' if nodes > 1 else ''} of {per_node}"


def _verdict(errors: tuple[str, ...]) -> str:
    if not errors:
        return "passed"
    return (
        "runtime_error"
        if any(e.startswith(("solution failed", "reference failed")) for e in errors)
        else "wrong_output"
    )


def local_check(
    problem: Any,
    world_sizes: tuple[int, ...] | None = None,
    known_answers: bool = True,
    bench: bool = True,
    traffic: bool = True,
    timeout_s: float = 120.0,
) -> list[CheckLine]:
    """Everything that can be proved about a problem on CPU, one line per check: the reference equals the oracle
    (and is neither flat nor the same for two seeds) at every declared world size and node grouping; every known
    answer that runs on CPU gets its verdict there (a correct one must pass everywhere, a wrong one must fail at the
    largest world size, as the catalogue's tests require); the bench preset's roofline is at least 20 us on every GPU
    profile that runs it and (trials + 2) copies of one rank's bench inputs fit 80 % of its GPU memory; and the
    roofline's link bytes at the small preset are at most what the reference itself sends or receives per rank (its
    inter-node bytes, at most what the reference sends to or receives from other nodes)."""
    from evaluator.contract.backends import runs_on_cpu
    from evaluator.checks.selfcheck import check_problem

    if problem.imported:  # no oracle and no roofline: its reference is the ground truth (docs/pkb.md)
        return [
            CheckLine(
                "reference",
                "-",
                False,
                "skipped",
                f"{problem.id} is imported from {problem.imported['source']} and has no oracle to check "
                f"against; evaluate solutions against its reference with `arena eval`",
            )
        ]
    lines: list[CheckLine] = []
    cases = check_cases(problem, world_sizes)
    for w, overrides in cases:
        report = check_problem(with_small(problem, overrides), w, timeout_s=timeout_s)
        lines.append(
            CheckLine(
                "reference",
                describe_case(problem, w, overrides),
                report.ok,
                "passed" if report.ok else _verdict(report.errors),
                "equals the oracle" if report.ok else "; ".join(report.errors)[:2000],
            )
        )
    if known_answers and cases:
        largest = max(w for w, _ in cases)
        for kind in KINDS:
            for path in sorted((problem.path / "solutions" / kind).glob("*.py")):
                name = f"{kind}/{path.name}"
                if not runs_on_cpu(path.read_text(), path.name):
                    lines.append(CheckLine(name, "CPU", True, "skipped", "a GPU-only backend: not run on CPU"))
                    continue
                for w, overrides in cases:
                    report = check_problem(with_small(problem, overrides), w, solution_path=path, timeout_s=timeout_s)
                    verdict = _verdict(report.errors)
                    counts = kind == "correct" or w == largest
                    ok = not counts or ((verdict == "passed") == (kind == "correct"))
                    why = "; ".join(report.errors)[:2000]
                    if kind == "correct":
                        detail = "as a correct answer must" if ok else f"a correct answer must pass: {why}"
                    elif verdict != "passed":
                        detail = f"as a wrong answer must ({why[:300]})"
                    elif not counts:
                        detail = f"passes at this size; it must fail at W={largest}"
                    else:
                        detail = "passes: the checks do not catch it; make the inputs or the tolerance stricter"

                    lines.append(CheckLine(name, describe_case(problem, w, overrides), ok, verdict, detail))
    if bench:
        lines += bench_lines(problem, world_sizes)
    if traffic:
        lines += traffic_lines(problem, cases)
    return lines


def bench_lines(problem: Any, world_sizes: tuple[int, ...] | None = None) -> list[CheckLine]:
    """The bench preset on every GPU profile that runs the problem: roofline time and inputs' memory per rank."""
    from evaluator.contract.profiles import PROFILES
    from evaluator.analysis.roofline import roofline

    lines = []
    copies = input_copies()
    for profile in PROFILES.values():
        w = profile.world_size
        if profile.device != "cuda" or w not in problem.world_sizes or (world_sizes and w not in world_sizes):
            continue
        try:
            r = roofline(problem, profile, w)
            nbytes = bench_input_bytes(problem, w)
        except Exception as exc:  # noqa: BLE001 - a bench preset that cannot even be shaped is the finding
            lines.append(
                CheckLine(
                    "bench",
                    profile.name,
                    False,
                    "runtime_error",
                    f"the bench preset fails: {type(exc).__name__}: {exc}"[:2000],
                )
            )
            continue
        budget = INPUT_SHARE * GPU_MEMORY_GIB[profile.name[:4]] * 2**30
        short, big = r["time_us"] < MIN_ROOFLINE_US, copies * nbytes > budget
        lines.append(
            CheckLine(
                "bench",
                profile.name,
                not (short or big),
                "failed" if short or big else "ok",
                f"roofline {r['time_us']:.1f} us ({r['bound']}-bound)"
                f"{' < ' if short else ' >= '}{MIN_ROOFLINE_US:.0f} us; "
                f"{copies} x {nbytes / 2**30:.2f} GiB of inputs per rank {'exceed' if big else 'fit'} "
                f"{INPUT_SHARE:.0%} of {GPU_MEMORY_GIB[profile.name[:4]]} GiB",
            )
        )
    return lines


def bench_input_bytes(problem: Any, w: int) -> int:
    """Bytes of rank 0's bench inputs at world size ``w`` (rank 0 holds the most where shards are uneven), worked out
    under FakeTensorMode without drawing them; where make_inputs needs values (a data-dependent shape), drawn for
    real on the CPU."""
    import torch
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException, FakeTensorMode

    module = problem.load_reference()
    preset = problem.presets["bench"]

    def size() -> int:
        inputs = module.make_inputs(0, w, 1234, torch.device("cpu"), preset.dtype, **preset.params)
        return sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))

    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            return size()
    except (DataDependentOutputException, DynamicOutputShapeException):
        return size()


def traffic_lines(problem: Any, cases: list[tuple[int, dict[str, Any]]]) -> list[CheckLine]:
    """The roofline's link bytes per rank at the small preset against what the reference itself moves, and on more
    than one node its inter-node bytes against what the reference moves to other nodes, counted by running it through
    the torch.distributed calls it makes (problems/traffic.py)."""
    from problems.traffic import reference_traffic

    lines = []
    for w, overrides in cases:
        where = describe_case(problem, w, overrides)
        try:
            counted = reference_traffic(problem, w, overrides)
        except Exception as exc:  # noqa: BLE001 - the reference's own failure is reported by its line above
            lines.append(CheckLine("link bytes", where, False, "runtime_error", f"{type(exc).__name__}: {exc}"[:2000]))
            continue
        terms = problem.roofline_terms(w, PRESET, overrides)
        checks = [("link bytes", "link_bytes_per_rank", "busiest", "")]
        per_node = {**problem.presets[PRESET].params, **overrides}.get("ranks_per_node")
        if "internode_bytes_per_rank" in terms and per_node and w // per_node > 1:
            checks.append(("internode bytes", "internode_bytes_per_rank", "busiest_internode", " to other nodes"))
        for what, term, key, to in checks:
            bound, most = terms[term], max(c[key] for c in counted)
            ok = bound <= most * (1 + 1e-9) + 1e-9
            lines.append(
                CheckLine(
                    what,
                    where,
                    ok,
                    "ok" if ok else "failed",
                    f"the roofline's {bound:.0f} per rank {'<=' if ok else '>'} the {most:.0f} the reference sends or "
                    f"receives{to} (busier direction, busiest rank)"
                    + ("" if ok else f"; per call: {[c['by_call'] for c in counted]}"),
                )
            )
    return lines
