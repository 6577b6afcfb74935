"""The check of a proposed problem on CPU (a contribution under review; a problem of the catalogue is checked by
:mod:`evaluator.checks.catalogue_check`): the folder is written to a temporary directory, validated by the registry, its
reference proved equal to its oracle at world sizes 2 and 4 (those it supports), and each known answer run against
the oracle: correct ones must pass at every size, wrong ones must fail at the largest (the same rule as
``tests/problems``).

The RQ job (:func:`evaluator.host.jobs.check_proposal_job`) never touches the database: it runs on the ``checks`` queue
and reports back by enqueueing signed jobs on the web side's queue. The contributor's ``reference.py`` is code nobody
has reviewed yet: the job runs it only inside the sandbox (``evaluator.host.check``), never in the worker's own
processes, and the worker serving ``checks`` holds no database credentials and no Django settings, as GPU hosts do.
The check follows the judge/judged split of an evaluation: inside the sandbox, :func:`produce` runs the contributor's
code and writes its outputs as data (tensors' bytes under a header of dtypes and shapes, never a pickle); outside,
:func:`judge` reads them, compares them and writes the report. Nothing the sandbox writes is a report.
"""

from __future__ import annotations

import platform
import re
import time
from pathlib import Path
from typing import Any


CHECK_WORLD_SIZES = (2, 4)
COLLECTIVE_TIMEOUT_S = 60  # a reference that deadlocks fails after this long instead of holding the worker
REPORT_VERSION = 1
FILES = ("problem.toml", "reference.py", "README.md")
KINDS = ("correct", "wrong")
SOLUTION_FILENAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.py$")


def write_folder(
    root: Path, category: str, name: str, files: dict[str, str], solutions: list[dict[str, str]] = ()
) -> Path:
    """Writes ``<root>/problems/<category>/<name>/`` with the three files and ``solutions/<kind>/<filename>``;
    returns the folder. Names must already be safe (the portal validates them; this refuses anything else)."""
    folder = Path(root) / "problems" / category / name
    if folder.resolve().parent.parent != (Path(root) / "problems").resolve():
        raise ValueError(f"unsafe problem id {category}/{name}")
    folder.mkdir(parents=True)
    for filename in FILES:
        (folder / filename).write_text(files[filename])
    for solution in solutions:
        if solution["kind"] not in KINDS or not SOLUTION_FILENAME.match(solution["filename"]):
            raise ValueError(f"unsafe known answer {solution['kind']}/{solution['filename']}")
        path = folder / "solutions" / solution["kind"] / solution["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(solution["source"])
    return folder


# The untrusted side runs the contributor's code and sends back only outputs; the trusted side compares them and
# writes the report. Each run's outputs (or its error) is one file in the data folder, named by what ran:
#   oracle.w{W}      the oracle's per-rank outputs for the check's seed, at world size W
#   oracle2.w{W}     the same for the next seed (a problem whose answer does not change with the seed is refused)
#   reference.w{W}   the distributed reference's per-rank outputs
#   {kind}.{file}.w{W}  a known answer's
# with ``.error`` appended when that run raised instead (its message, as text).
SEED = 1234
PRESET = "small"
DATA_MAGIC = b"ARENA-CHECK-DATA-1\n"
MAX_DATA_BYTES = 256 << 20  # one run's outputs; the small preset's are kilobytes
MAX_ERROR_BYTES = 4096
DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "complex64",
    "complex128",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)


def produce(folder: Path, out: Path, world_sizes: tuple[int, ...] = CHECK_WORLD_SIZES) -> None:
    """Runs in the check's sandbox, as the sandbox's uid: the contributor's oracle, reference and known answers, at
    each world size the check uses, their outputs written to ``out`` as data (:func:`write_data`). It decides
    nothing: what it writes is compared outside the sandbox (:func:`judge`)."""
    from evaluator.judge.compare import as_tuple, clone_inputs
    from evaluator.checks.selfcheck import _inputs
    from problems.registry import load_problem

    problem = load_problem(folder, folder.parent.parent)
    params = problem.presets[PRESET].params

    def oracle(w: int, seed: int) -> list:
        module = problem.load_reference()
        inputs = [_inputs(problem, module, r, w, seed, PRESET) for r in range(w)]
        return [as_tuple(o) for o in module.oracle([clone_inputs(i) for i in inputs], **params)]

    for w in [w for w in world_sizes if w in problem.world_sizes]:
        # each step runs at once; the defaults bind this iteration's values all the same
        _step(out, f"oracle.w{w}", lambda w=w: oracle(w, SEED), "oracle")
        _step(out, f"oracle2.w{w}", lambda w=w: oracle(w, SEED + 1), "oracle")
        _step(out, f"reference.w{w}", lambda w=w: _rank_outputs(problem, w, None), "reference")
        for kind in KINDS:
            for path in sorted((folder / "solutions" / kind).glob("*.py")):
                _step(
                    out, f"{kind}.{path.name}.w{w}", lambda w=w, path=path: _rank_outputs(problem, w, path), "solution"
                )


def _rank_outputs(problem, w: int, solution_path: Path | None) -> list:
    """The reference (or a known answer) on ``w`` gloo ranks, forked from this process; each rank's outputs."""
    from evaluator.checks.selfcheck import rank_outputs

    return rank_outputs(problem, w, SEED, PRESET, solution_path, COLLECTIVE_TIMEOUT_S, weights_only=False)


def _step(out: Path, name: str, run, who: str) -> None:
    try:
        write_data(out / name, run())
    except BaseException as exc:  # noqa: BLE001 - the contributor's code may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        from evaluator.checks.selfcheck import RanksFailed  # with torch: only where the ranks ran

        text = f"{who} {exc}" if isinstance(exc, RanksFailed) else f"{who} check raised {type(exc).__name__}: {exc}"
        (out / f"{name}.error").write_text(text[: MAX_ERROR_BYTES // 2])


def write_data(path: Path, ranks: list) -> None:
    """Per-rank outputs (a list, per rank, of tensors) as a header of dtypes and shapes and the tensors' bytes: no
    pickle, so the side that reads it runs nothing of the writer's."""
    import json

    import torch

    header, blobs = [], []
    for outputs in ranks:
        row = []
        for t in outputs:
            if type(t) is not torch.Tensor:
                raise TypeError(f"an output is a {type(t).__name__}, not a tensor")
            t = t.detach().to("cpu").contiguous()
            row.append({"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)})
            blobs.append(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        header.append(row)
    head = json.dumps({"ranks": header}).encode()
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        f.write(DATA_MAGIC + len(head).to_bytes(8, "little") + head)
        for b in blobs:
            f.write(b)
    tmp.replace(path)


def read_data(raw: bytes) -> list:
    """:func:`write_data`'s per-rank tensors, checked field by field; ValueError when the bytes are not that."""
    import json

    import torch

    if not raw.startswith(DATA_MAGIC) or len(raw) < len(DATA_MAGIC) + 8:
        raise ValueError("not the check's data format")
    at = len(DATA_MAGIC)
    size = int.from_bytes(raw[at : at + 8], "little")
    at += 8
    if size > len(raw) - at or size > 1 << 20:
        raise ValueError("a header larger than the data")
    header = json.loads(raw[at : at + size].decode("utf-8"))
    at += size
    ranks = header.get("ranks") if isinstance(header, dict) else None
    if not isinstance(ranks, list) or len(ranks) > 64:
        raise ValueError("no list of ranks")
    out = []
    for row in ranks:
        if not isinstance(row, list) or len(row) > 64:
            raise ValueError("a rank's outputs are not a list")
        tensors = []
        for item in row:
            dtype, shape = (item.get("dtype"), item.get("shape")) if isinstance(item, dict) else (None, None)
            if (
                dtype not in DTYPES
                or not isinstance(shape, list)
                or len(shape) > 8
                or any(type(d) is not int or d < 0 for d in shape)
            ):
                raise ValueError("an output's dtype or shape is not one the check reads")
            torch_dtype = getattr(torch, dtype)
            numel = 1
            for d in shape:
                numel *= d
            nbytes = numel * torch.empty((), dtype=torch_dtype).element_size()
            if nbytes > len(raw) - at:
                raise ValueError("fewer bytes than the outputs' shapes need")
            flat = (
                torch.frombuffer(bytearray(raw[at : at + nbytes]), dtype=torch.uint8)
                if nbytes
                else torch.empty(0, dtype=torch.uint8)
            )
            tensors.append(flat.view(torch_dtype).reshape(shape))
            at += nbytes
        out.append(tuple(tensors))
    if at != len(raw):
        raise ValueError("bytes beyond the outputs")
    return out


NOTHING_CAME_BACK = "nothing came back from the check's sandbox for this run (it ended, or was stopped, before)"


def _load(data: Path, name: str) -> tuple[list | None, str | None]:
    """(outputs, None), or (None, why there are none): the run's own error, or what is wrong with what came back."""
    import os

    from evaluator import wire

    try:
        fd = wire.open_plain(data / name)
    except FileNotFoundError:
        try:
            return None, wire.read_plain_text(data / f"{name}.error", MAX_ERROR_BYTES, 0).strip() or "failed"
        except (OSError, ValueError):
            return None, NOTHING_CAME_BACK
    except (OSError, ValueError):
        return None, "what came back is not a plain file"
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MAX_DATA_BYTES + 1)
    if len(raw) > MAX_DATA_BYTES:
        return None, f"its outputs are larger than the {MAX_DATA_BYTES >> 20} MiB a check reads"
    try:
        return read_data(raw), None
    except (ValueError, TypeError, RuntimeError, UnicodeDecodeError) as exc:
        return None, f"its outputs came back malformed ({exc})"


def judge(
    folder: Path,
    data: Path,
    world_sizes: tuple[int, ...] = CHECK_WORLD_SIZES,
    note: str = "",
    started: float | None = None,
) -> dict[str, Any]:
    """The check report, made outside the sandbox from the folder the host wrote (``load_problem`` parses the
    reference, never runs it) and the outputs the sandbox sent back in ``data``: ``ok``, ``message`` (the first
    reason it failed, or a summary), ``reference`` (one entry per world size), ``known_answers`` (one entry per file
    and world size), ``warnings``. ``note`` (how the sandbox ended) is added where a run sent nothing back."""
    from evaluator.judge.compare import compare
    from evaluator.checks.selfcheck import flatness_error
    from problems.registry import ProblemError, load_problem

    started = time.monotonic() if started is None else started
    report: dict[str, Any] = {
        "version": REPORT_VERSION,
        "ok": False,
        "message": "",
        "problem_id": None,
        "world_sizes": [],
        "reference": [],
        "known_answers": [],
        "warnings": [],
        "environment": _environment(),
    }
    try:
        problem = load_problem(folder, folder.parent.parent)
    except ProblemError as exc:
        report["message"] = str(exc)
        return _finish(report, started)
    report["problem_id"] = problem.id
    sizes = [w for w in world_sizes if w in problem.world_sizes]
    report["world_sizes"] = sizes
    if not sizes:
        report["message"] = (
            f"problem.toml: 'world_sizes' lists {list(problem.world_sizes)}; it must include "
            f"{' or '.join(map(str, world_sizes))} so the reference can be checked on CPU."
        )
        return _finish(report, started)
    tol = problem.tolerance(problem.presets[PRESET].dtype)

    def against(w: int, expected: list | None, oracle_error: str | None, name: str, who: str) -> list[str]:
        if expected is None:
            return [(oracle_error or "the oracle returned nothing") + (f" ({note})" if note else "")]
        if len(expected) != w:
            return [f"oracle returned {len(expected)} outputs for {w} ranks"]
        got, error = _load(data, name)
        if got is None:
            return [error + (f" ({note})" if note and error == NOTHING_CAME_BACK else "")]
        if len(got) != w:
            return [f"{who} came back with {len(got)} ranks' outputs for {w}"]
        return [
            f"rank {r}: {who} differs from oracle: {m.message}"
            for r in range(w)
            if (m := compare(got[r], expected[r], tol.atol, tol.rtol))
        ]

    failures: list[str] = []
    expected_at: dict[int, tuple[list | None, str | None]] = {}
    for w in sizes:
        expected, oracle_error = expected_at[w] = _load(data, f"oracle.w{w}")
        errors = against(w, expected, oracle_error, f"reference.w{w}", "reference")
        if not errors and expected is not None:
            flat = flatness_error(problem, expected, PRESET)
            if flat:
                errors.append(flat)
            other, other_error = _load(data, f"oracle2.w{w}")
            if other is None:
                errors.append(other_error or "the oracle returned nothing for a second seed")
            elif len(other) == w and all(compare(other[r], expected[r], tol.atol, tol.rtol) is None for r in range(w)):
                errors.append("the output does not change with the seed; inputs must be random")
        report["reference"].append({"world_size": w, "ok": not errors, "errors": errors})
        if errors:
            failures.append(f"at W={w}, {errors[0]}")

    for kind in KINDS:
        for path in sorted((folder / "solutions" / kind).glob("*.py")):
            for w in sizes:
                expected, oracle_error = expected_at[w]
                errors = against(w, expected, oracle_error, f"{kind}.{path.name}.w{w}", "solution")
                # correct: must pass at every size; wrong: must fail at the largest (a bug may need 4 ranks to
                # show), the smaller sizes are shown for information only
                counts = kind == "correct" or w == sizes[-1]
                ok = not counts or (not errors if kind == "correct" else bool(errors))
                report["known_answers"].append(
                    {
                        "kind": kind,
                        "filename": path.name,
                        "world_size": w,
                        "passed_oracle": not errors,
                        "counts": counts,
                        "ok": ok,
                        "errors": errors,
                    }
                )
                if not ok and kind == "correct":
                    failures.append(f"known answer correct/{path.name} fails at W={w}: {errors[0]}")
                elif not ok:
                    failures.append(
                        f"known answer wrong/{path.name} passes at W={w}: the checks do not catch it; "
                        f"make the inputs or the tolerance stricter"
                    )
    kinds_given = {a["kind"] for a in report["known_answers"]}
    for kind in KINDS:
        if kind not in kinds_given:
            report["warnings"].append(
                f"no {kind} known answer was given; the catalogue's tests need at least one "
                f"solutions/{kind}/*.py before the folder can be merged"
            )
    report["ok"] = not failures
    report["message"] = (
        failures[0]
        if failures
        else (
            f"the reference equals the oracle at W={', '.join(map(str, sizes))}"
            + (
                f"; {len(report['known_answers'])} known-answer runs behaved as labelled"
                if report["known_answers"]
                else ""
            )
        )
    )
    if len(failures) > 1:
        report["message"] += f" (and {len(failures) - 1} more problem{'s' if len(failures) > 2 else ''})"
    return _finish(report, started)


def _environment() -> dict[str, str]:
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "backend": "gloo (CPU)",
        "host": platform.node(),
    }


def _finish(report: dict[str, Any], started: float) -> dict[str, Any]:
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report


def failed_report(message: str) -> dict[str, Any]:
    """A report for a check that could not run to the end (the job raised, timed out or its worker died)."""
    return {
        "version": REPORT_VERSION,
        "ok": False,
        "message": message,
        "problem_id": None,
        "world_sizes": [],
        "reference": [],
        "known_answers": [],
        "warnings": [],
        "duration_s": None,
    }
