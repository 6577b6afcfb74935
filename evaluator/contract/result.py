"""The result document: a versioned, JSON-serialisable record of one evaluation, written by a worker as a dict and read
by whoever receives it through :func:`from_json` (typed, every top-level key declared in ``TOP_LEVEL_KEYS``)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, TypeGuard

RESULT_SCHEMA_VERSION = 1
# Which timing loop produced a result's figures; raised whenever a change can move the figures of the same code
# (docs/protocol.md lists the revisions), so a reader can tell results measured under different loops apart.
TIMING_PROTOCOL_REVISION = 16
LOG_LIMIT = 8000  # characters kept of each rank's log


class Verdict(str, enum.Enum):
    PASSED = "passed"
    WRONG_OUTPUT = "wrong_output"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    INFRA_ERROR = "infra_error"


def trim(text: str, limit: int = LOG_LIMIT) -> str:
    """Keeps the head and the tail of a long log; the middle is rarely what a reader needs."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n… [{len(text) - limit} characters cut] …\n" + text[-half:]


def empty_document() -> dict[str, Any]:
    """Every key a result carries, so readers never guess whether a field exists."""
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "verdict": None,
        "message": "",
        "failed_ranks": [],
        "problem": {},
        "solution": {},
        "profile": {},
        "trials": [],
        "timing": None,
        "roofline": None,
        "flags": {},
        "environment": {},
        "phases": {},
        "timeline": {},  # when each step of the set-up ended, seconds from the start
        "logs": {},
    }


# --- The document as the portal reads it ---------------------------------------------------------------------------
# A worker builds the document as a dict (``empty_document`` and the evaluator's stages fill it) and sends it as JSON;
# whoever receives it calls ``from_json`` once, which checks every top-level key and the figures the portal stores and
# ranks by, and returns them typed. The whole document (``ResultDocument.raw``) is kept as it came, for the pages.


class ResultDocumentError(ValueError):
    """Not a result document: the message names the field (``timing.speedup``) and what is wrong with it."""


@dataclass(frozen=True)
class ProblemRef:
    """``problem``: which problem was evaluated, as the worker found it."""

    id: str | None  # "collectives/all_reduce", or "<suite>/<name>" for an imported suite
    version: int | None  # the problem's version (the worker refuses another than the spec names)
    content_hash: str | None  # hash of the problem's folder, so rankings compare like with like
    suite: str | None  # "arena", or the imported suite's name
    # Also, when written: "preset", "world_size", "params"; for an imported problem "imported", "inputs",
    # "inputs_decision", "roofline" (a note): kept in ResultDocument.raw.


@dataclass(frozen=True)
class SideTiming:
    """``timing.baseline`` / ``timing.solution``: one side's per-call times (``stats.summarize``)."""

    median_us: float | None  # median over iterations of the slowest rank's time, µs
    # Also "mean_us", "p10_us", "p90_us", "min_us", "max_us", "n", ...: kept in ResultDocument.raw.


@dataclass(frozen=True)
class Interval:
    low: float | None  # lower end of the 95 % interval
    high: float | None  # upper end


@dataclass(frozen=True)
class Timing:
    """``timing``: present when the evaluation was timed and got that far (None otherwise)."""

    speedup: float | None  # the baseline's time over the solution's (median of per-iteration ratios)
    speedup_ci: Interval | None  # its 95 % interval (written as [low, high]; {"low", "high"} is read too)
    baseline: SideTiming | None  # the PyTorch + NCCL reference, timed in the judge's processes
    solution: SideTiming | None  # the solution, timed in the sandbox
    protocol_revision: int | None  # TIMING_PROTOCOL_REVISION of the loop that measured (docs/protocol.md)
    speedup_estimator: str  # how ``speedup`` was estimated, in words ("" when not said)
    # Also "method", "figure", "iterations" (timed windows), "calls_per_window", "spin_us" (in front of each window),
    # "input_feed" ("device": GPU hosts, inputs handed over in device memory; "host": through a memory file),
    # "output_feed" ("device": the judges made device memory for the outputs and an untimed call's inputs after it,
    # where frames of at least 32 MiB of data go; else "host"), "input_staging" ("gated": GPU hosts, the judge wrote
    # each call's inputs into the device feed only once the call's stream had reached its gate; "allocator": they
    # waited under the spin in a block of torch's caching allocator; "host": CPU hosts),
    # "speedup_uncertainty", "ratio_of_medians", "launch_cpu_us",
    # "rechecked_outputs", "timer", "graph", "host_clock", "quick" (test mode): kept in ResultDocument.raw.


@dataclass(frozen=True)
class Roofline:
    """``roofline``: the communication-aware lower bound on the time (None when the problem has no model)."""

    time_us: float | None  # the bound, µs
    bound: str | None  # what limits it: "link", "memory", "compute", "latency", ...
    baseline_fraction: float | None  # the bound over the baseline's time (1.0 would be at the roofline)
    solution_fraction: float | None  # the bound over the solution's time


@dataclass(frozen=True)
class ResultDocument:
    """One evaluation's result document (schema ``RESULT_SCHEMA_VERSION``), checked by :func:`from_json`."""

    schema_version: int  # the schema the worker wrote (RESULT_SCHEMA_VERSION at most)
    verdict: Verdict  # exactly one per evaluation
    message: str  # for the person who submitted: why this verdict, or the speedup
    failed_ranks: list[int]  # the ranks the verdict blames (empty when none or all)
    problem: ProblemRef  # which problem, version and content
    timing: Timing | None  # figures of a timed evaluation
    roofline: Roofline | None  # the bound and how close each side came
    raw: dict[str, Any]  # the whole document as received: every key of TOP_LEVEL_KEYS that the worker wrote


# Every top-level key a result document may carry, with what it holds (each a JSON type or null). A key that is not
# here is refused by from_json: the worker and the portal agree on the schema, and RESULT_SCHEMA_VERSION moves with it.
TOP_LEVEL_KEYS: dict[str, str] = {
    "schema_version": "int: the schema the worker wrote",
    "verdict": "str: one of Verdict's values",
    "message": "str: why, for the person who submitted",
    "failed_ranks": "list[int]: the ranks the verdict blames",
    "problem": "object: id, version, content_hash, suite, preset, world_size, params (ProblemRef)",
    "solution": "object: name, sha256, backend",
    "profile": "object: the hardware profile evaluated on (name, backend, device, world_size, nodes, ...)",
    "trials": "list[object]: per correctness trial, per rank: ok, error, max_abs_error",
    "timing": "object or null: the timed figures (Timing)",
    "roofline": "object or null: the bound and both sides' fractions (Roofline)",
    "flags": "object: uses_nccl, suspicious_speedup, what communication the ranks called, ...",
    "environment": "object: GPUs, driver, CUDA, torch, NCCL of the worker",
    "phases": "object: seconds spent per phase (setup, correctness, timing, input_probe, total)",
    "timeline": "object: when each step of the set-up ended, seconds from the start",
    "logs": "object: each rank's and the sandbox's trimmed log",
    "static_checks": "object: the static checks' refusals and notes on the source",
    "containment": "object: what the sandbox was (bubblewrap, uid, network, limits, started ahead)",
    "traceback": "str: the solution's traceback, paths neutralised, when it raised",
    "limits_reached": "list[str]: the sandbox limits (processes, memory, disk) the solution ran into",
    "test": "object: test mode's annotation (unranked, quick timing, the note)",
    "diagnostics": "list: test mode's hints on a failure",
}
_OBJECT_KEYS = ("problem", "solution", "profile", "flags", "environment", "phases", "timeline", "logs")
_OPTIONAL_OBJECT_KEYS = ("timing", "roofline", "static_checks", "containment", "test")
_OPTIONAL_LIST_KEYS = ("limits_reached", "diagnostics")


def from_json(data: Any) -> ResultDocument:
    """The result document ``data`` (a parsed JSON value), checked and typed; raises ResultDocumentError naming the
    field otherwise. Numbers must be finite (JSON has no NaN): a receiver that may get them cleans them first."""
    if not isinstance(data, dict):
        raise ResultDocumentError(f"a result document is a JSON object, not {_kind(data)}")
    unknown = sorted(str(k) for k in data if k not in TOP_LEVEL_KEYS)
    if unknown:
        raise ResultDocumentError(
            f"unknown top-level key(s) {', '.join(map(repr, unknown))} (not in schema version "
            f"{RESULT_SCHEMA_VERSION}: evaluator/contract/result.py TOP_LEVEL_KEYS)"
        )
    version = data.get("schema_version")
    if not _is_int(version) or not 1 <= version <= RESULT_SCHEMA_VERSION:
        raise ResultDocumentError(
            f"schema_version must be a whole number from 1 to {RESULT_SCHEMA_VERSION}, not {version!r}"
        )
    verdict = data.get("verdict")
    if verdict not in _VERDICTS:
        raise ResultDocumentError(f"unknown verdict {verdict!r} (one of {', '.join(sorted(_VERDICTS))})")
    message = data.get("message")
    if not isinstance(message, str):
        raise ResultDocumentError(f"message must be a string, not {_kind(message)}")
    ranks = data.get("failed_ranks")
    if not isinstance(ranks, list) or not all(_is_int(r) for r in ranks):
        raise ResultDocumentError(f"failed_ranks must be a list of whole numbers, not {ranks!r:.80}")
    if not isinstance(data.get("trials"), list):
        raise ResultDocumentError(f"trials must be a list, not {_kind(data.get('trials'))}")
    for key in _OBJECT_KEYS:
        _object(data.get(key), key)
    for key in _OPTIONAL_OBJECT_KEYS:
        if data.get(key) is not None:
            _object(data[key], key)
    for key in _OPTIONAL_LIST_KEYS:
        if data.get(key) is not None and not isinstance(data[key], list):
            raise ResultDocumentError(f"{key} must be a list or null, not {_kind(data[key])}")
    if data.get("traceback") is not None and not isinstance(data["traceback"], str):
        raise ResultDocumentError(f"traceback must be a string or null, not {_kind(data['traceback'])}")
    return ResultDocument(
        schema_version=version,
        verdict=Verdict(verdict),
        message=message,
        failed_ranks=ranks,
        problem=_problem(data["problem"]),
        timing=_timing(data.get("timing")),
        roofline=_roofline(data.get("roofline")),
        raw=data,
    )


_VERDICTS = frozenset(v.value for v in Verdict)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ResultDocumentError(f"{where} must be an object, not {_kind(value)}")
    return value


def _number(section: dict[str, Any], key: str, where: str) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    if _is_int(value) or isinstance(value, float):
        number = float(value)
        if math.isfinite(number):
            return number
    raise ResultDocumentError(f"{where}.{key} must be a finite number or null, not {value!r:.80}")


def _text(section: dict[str, Any], key: str, where: str) -> str | None:
    value = section.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ResultDocumentError(f"{where}.{key} must be a string or null, not {_kind(value)}")


def _problem(section: dict[str, Any]) -> ProblemRef:
    version = section.get("version")
    if version is not None and (not _is_int(version) or version < 1):
        raise ResultDocumentError(f"problem.version must be a whole number from 1, not {version!r:.80}")
    content_hash = _text(section, "content_hash", "problem") or _text(section, "hash", "problem")  # "hash": older
    return ProblemRef(
        id=_text(section, "id", "problem"),
        version=version,
        content_hash=content_hash,
        suite=_text(section, "suite", "problem"),
    )


def _side(section: dict[str, Any], key: str) -> SideTiming | None:
    value = section.get(key)
    if value is None:
        return None
    return SideTiming(median_us=_number(_object(value, f"timing.{key}"), "median_us", f"timing.{key}"))


def _interval(value: Any) -> Interval | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return Interval(_number(value, "low", "timing.speedup_ci"), _number(value, "high", "timing.speedup_ci"))
    if isinstance(value, list) and len(value) == 2:
        pair = {"low": value[0], "high": value[1]}
        return Interval(_number(pair, "low", "timing.speedup_ci"), _number(pair, "high", "timing.speedup_ci"))
    raise ResultDocumentError(f'timing.speedup_ci must be [low, high], {{"low", "high"}} or null, not {value!r:.80}')


def _timing(value: Any) -> Timing | None:
    if value is None:
        return None
    section = _object(value, "timing")
    revision = section.get("protocol_revision")
    if revision is not None and (not _is_int(revision) or not 1 <= revision < 32768):
        raise ResultDocumentError(
            f"timing.protocol_revision must be a whole number from 1 to 32767, not {revision!r:.80}"
        )
    return Timing(
        speedup=_number(section, "speedup", "timing"),
        speedup_ci=_interval(section.get("speedup_ci")),
        baseline=_side(section, "baseline"),
        solution=_side(section, "solution"),
        protocol_revision=revision,
        speedup_estimator=_text(section, "speedup_estimator", "timing") or "",
    )


def _roofline(value: Any) -> Roofline | None:
    if value is None:
        return None
    section = _object(value, "roofline")
    return Roofline(
        time_us=_number(section, "time_us", "roofline"),
        bound=_text(section, "bound", "roofline"),
        baseline_fraction=_number(section, "baseline_fraction", "roofline"),
        solution_fraction=_number(section, "solution_fraction", "roofline"),
    )
