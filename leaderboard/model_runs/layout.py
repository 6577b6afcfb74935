"""What a model-run archive holds and where, checked whole: :func:`read_archive` is the one way in.

A model run is one ``.zip`` or ``.tar.gz`` holding, at its root::

    manifest.json                                   (or manifest.toml) — who, what protocol, which hardware
    attempts/<category>/<name>/attempt_<i>.py       i = 1..k, exactly k for every problem present
    trajectories/<category>/<name>/attempt_<i>.jsonl  optional; .json, .jsonl, .md or .txt

:func:`read_archive` reads the container (``container``: shape and safety), the manifest (``manifest``: its schema),
then the layout rules here: every path in its place, k attempts per problem, known problems of the run's suite that
run on its hardware, each attempt a solution file (the contract's one check, ``evaluator.contract.source``), each
trajectory readable. It returns a :class:`ParsedRun` or raises :class:`ArchiveError`, whose message names the file,
the field and what to do; content problems are collected so one upload reports all of them
(``ArchiveError.problems``). No Django models: it takes the known problems as data.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from evaluator.contract.profiles import PROFILES
from evaluator.contract.source import solution_problem
from leaderboard.beyond_contract import problem_for_solution_filename
from leaderboard.model_runs.container import (
    MAX_ARCHIVE_BYTES,
    MAX_ATTEMPT_BYTES,
    MAX_FILES,
    MAX_MANIFEST_BYTES,
    MAX_RATIO,
    MAX_TOTAL_BYTES,
    MAX_TRAJECTORY_BYTES,
    Collector,
    Entry,
    Limits,
    read_container,
    refusal,
)
from leaderboard.model_runs.manifest import OPTIONAL, REQUIRED, Manifest, parse_manifest

MANIFEST_NAMES = ("manifest.json", "manifest.toml")
TRAJECTORY_EXTENSIONS = ("json", "jsonl", "md", "txt")
ATTEMPT_RE = re.compile(r"attempt_([1-9][0-9]*)\.py")
TRAJECTORY_RE = re.compile(r"attempt_([1-9][0-9]*)\.(" + "|".join(TRAJECTORY_EXTENSIONS) + ")")
LAYOUT = (
    "put manifest.json (or manifest.toml), attempts/<category>/<name>/attempt_<i>.py and optionally "
    "trajectories/<category>/<name>/attempt_<i>.jsonl at the archive's root"
)


@dataclass(frozen=True)
class ParsedAttempt:
    problem_id: str
    index: int
    filename: str  # the path inside the archive
    source: str


@dataclass(frozen=True)
class ParsedTrajectory:
    problem_id: str
    index: int
    filename: str
    format: str  # json, jsonl, md or txt
    text: str


@dataclass(frozen=True)
class ParsedRun:
    """A valid archive: attempts sorted by problem and index; ``not_attempted`` lists the known problems of the
    run's suite (active, supporting its hardware, where the caller's problems say so) that it has no attempts for.
    """

    manifest: Manifest
    attempts: list[ParsedAttempt]
    trajectories: list[ParsedTrajectory] = field(default_factory=list)
    not_attempted: tuple[str, ...] = ()

    @property
    def problem_ids(self) -> list[str]:
        return sorted({a.problem_id for a in self.attempts})


def classify(path: str) -> str | None:
    """manifest, attempt, trajectory, or None for a file that has no place in a model run."""
    parts = path.split("/")
    if path in MANIFEST_NAMES:
        return "manifest"
    if parts[0] == "attempts":
        return "attempt"
    if parts[0] == "trajectories":
        return "trajectory"
    return None


def stray_problems(stray: list[str]) -> list[str]:
    """What to say of the files that have no place in a model run."""
    if not stray:
        return []
    nested = [p for p in stray if p.rsplit("/", 1)[-1] in MANIFEST_NAMES]
    if nested:
        top = nested[0].rsplit("/", 1)[0]
        return [
            f"{nested[0]}: the manifest is not at the archive's root; archive the contents of {top}/, "
            f"not the folder itself."
        ]
    shown = ", ".join(stray[:10]) + (f" and {len(stray) - 10} more" if len(stray) > 10 else "")
    return [f"files outside manifest, attempts/ and trajectories/: {shown}; remove them ({LAYOUT})."]


def _info(value: Any, name: str) -> Any:
    """A problem's attribute, whether the caller passed registry dataclasses, model rows or plain dicts."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _check_source(path: str, data: bytes, problems: list[str]) -> str | None:
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.append(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}); save the file as UTF-8."
        )
        return None
    source = source.removeprefix("\ufeff")
    if "\0" in source:
        line = source[: source.index("\0")].count("\n") + 1
        problems.append(f"{path}: not Python source (a NUL byte at line {line}); upload the .py file as text.")
        return None
    try:
        ast.parse(source, filename=path)
    except SyntaxError as exc:
        problems.append(
            f"{path}: not valid Python at line {exc.lineno}: {exc.msg}; the file must be a Python module that parses."
        )
        return None
    except (RecursionError, MemoryError):
        problems.append(f"{path}: nests too deeply for the Python parser; simplify it.")
        return None
    problem = solution_problem(source, where=path)
    if problem is not None:
        problems.append(problem)
        return None
    return source


def _check_trajectory(path: str, fmt: str, data: bytes, problems: list[str]) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.append(f"{path}: not UTF-8 text (line {line}); save it as UTF-8.")
        return None
    try:
        if fmt == "json":
            json.loads(text)
        elif fmt == "jsonl":
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        json.loads(line)
                    except json.JSONDecodeError as exc:
                        problems.append(
                            f"{path}: line {number} is not a JSON value ({exc.msg}); a .jsonl file "
                            f"holds one JSON value per line."
                        )
                        return None
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg}); fix it or name it .txt.")
        return None
    except RecursionError:
        problems.append(f"{path}: nests too deeply; flatten it or name it .txt.")
        return None
    return text


def _pkb_problem(parts: list[str], known: Mapping[str, Any]) -> str | None:
    """The imported ParallelKernelBench problem an ``attempts/<id>_<name>_<backend>.py`` file belongs to."""
    if len(parts) != 2 or not parts[1].endswith(".py"):
        return None
    return problem_for_solution_filename(parts[1], [pid for pid in known if pid.startswith("pkb/")])


def read_archive(
    data: bytes,
    filename: str,
    known_problems: Mapping[str, Any] | Iterable[Any],
    *,
    max_bytes: int = MAX_ARCHIVE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_files: int = MAX_FILES,
    max_attempt_bytes: int = MAX_ATTEMPT_BYTES,
    max_trajectory_bytes: int = MAX_TRAJECTORY_BYTES,
    max_manifest_bytes: int = MAX_MANIFEST_BYTES,
    max_ratio: float = MAX_RATIO,
) -> ParsedRun:
    """Validates a model-run archive held in memory and returns what it holds; raises :class:`ArchiveError`.

    ``known_problems`` are the problems the portal accepts: ids, objects with an ``id``, or a mapping from id
    to anything with optional ``suite``, ``world_sizes`` and ``is_active`` (attributes or keys: registry ``Problem``
    objects, ``leaderboard.models.Problem`` rows and dicts all work); where present they refuse problems of
    another suite, problems that cannot run at the manifest's hardware's world size, and retired ones.
    """
    archive = filename or "the archive"
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("read_archive takes the archive's bytes")
    limits = Limits(
        archive=max_bytes,
        total=max_total_bytes,
        files=max_files,
        manifest=max_manifest_bytes,
        attempt=max_attempt_bytes,
        trajectory=max_trajectory_bytes,
        ratio=max_ratio,
    )
    collector = read_container(bytes(data), archive, limits, classify, layout=LAYOUT)
    return _validate(collector, known_problems)


def _validate(collector: Collector, known_problems: Mapping[str, Any] | Iterable[Any]) -> ParsedRun:
    problems: list[str] = []
    if isinstance(known_problems, Mapping):
        known: Mapping[str, Any] = known_problems
    else:  # ids, or objects with an ``id`` (registry problems, model rows)
        known = {
            item if isinstance(item, str) else str(_info(item, "id")): None if isinstance(item, str) else item
            for item in known_problems
        }
    by_kind: dict[str, list[Entry]] = {"manifest": [], "attempt": [], "trajectory": []}
    for entry in collector.entries:
        by_kind[entry.kind].append(entry)

    manifest: Manifest | None = None
    manifests = sorted(e.path for e in collector.entries if e.kind == "manifest")
    oversized_manifest = any(p.startswith(MANIFEST_NAMES) for p in collector.problems)
    if len(manifests) > 1:
        problems.append("the archive holds both manifest.json and manifest.toml; keep one.")
    elif (
        not manifests
        and not oversized_manifest
        and not any(p.rsplit("/", 1)[-1] in MANIFEST_NAMES for p in collector.stray)
    ):
        problems.append(
            f"manifest.json is missing at the archive's root; add it ({LAYOUT}; its fields are "
            f"{', '.join(REQUIRED)}, optionally {', '.join(OPTIONAL)})."
        )
    else:
        for entry in by_kind["manifest"]:
            manifest = parse_manifest(entry.path, entry.data, problems)
    problems += collector.problems + stray_problems(collector.stray)
    k = manifest.k if manifest is not None else None
    suite = manifest.suite if manifest is not None else None
    world_size = PROFILES[manifest.hardware].world_size if manifest is not None else None
    hardware = manifest.hardware if manifest is not None else ""
    manifest_name = manifests[0] if manifests else "manifest.json"

    refused_ids: set[str] = set()

    def problem_ok(pid: str, folder: str) -> bool:
        if pid in refused_ids:
            return False
        why = None
        if pid not in known:
            close = difflib.get_close_matches(pid, list(known), n=1)
            why = (
                f"unknown problem {pid!r}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
                + "; folder names must be problem ids as the problems page lists them"
            )
        else:
            info = known[pid]
            p_suite, sizes, active = _info(info, "suite"), _info(info, "world_sizes"), _info(info, "is_active")
            if suite is not None and p_suite is not None and p_suite != suite:
                why = f"{pid!r} belongs to suite {p_suite!r} but {manifest_name} says suite {suite!r}"
            elif active is False:
                why = f"{pid!r} is retired and takes no new attempts; drop its folder"
            elif world_size is not None and sizes is not None and world_size not in sizes:
                why = (
                    f"{pid!r} runs on {', '.join(map(str, sizes))} ranks, not on the {world_size} of "
                    f"hardware {hardware!r}; drop its folder or change the hardware"
                )
        if why is not None:
            refused_ids.add(pid)
            problems.append(f"{folder}/: {why}.")
            return False
        return True

    attempts: list[ParsedAttempt] = []
    indices: dict[str, set[int]] = {}
    pkb_numbering: dict[str, int] = {}
    for entry in sorted(by_kind["attempt"], key=lambda e: e.path):
        parts = entry.path.split("/")
        match = ATTEMPT_RE.fullmatch(parts[-1]) if len(parts) == 4 else None
        pkb_pid = _pkb_problem(parts, known) if match is None else None
        if pkb_pid is not None:
            # ParallelKernelBench's own file names, attempts/<id>_<name>_<backend>.py: one attempt per file,
            # numbered in name order for each problem.
            pkb_numbering[pkb_pid] = pkb_numbering.get(pkb_pid, 0) + 1
            pid, index = pkb_pid, pkb_numbering[pkb_pid]
            parts = ["attempts", *pid.split("/"), f"attempt_{index}.py"]
            match = ATTEMPT_RE.fullmatch(parts[-1])
        if match is None:
            problems.append(
                f"{entry.path}: not where an attempt goes; name attempts "
                f"attempts/<category>/<name>/attempt_<i>.py, e.g. attempts/collectives/all_reduce/"
                f"attempt_1.py, with i from 1 to k."
            )
            continue
        pid, index = f"{parts[1]}/{parts[2]}", int(match.group(1))
        if not problem_ok(pid, f"attempts/{pid}"):
            continue
        indices.setdefault(pid, set()).add(index)
        if k is not None and index > k:
            problems.append(
                f"{entry.path}: attempt {index} is outside 1..k (k={k} in {manifest_name}); "
                f"number the attempts attempt_1.py to attempt_{k}.py."
            )
            continue
        source = _check_source(entry.path, entry.data, problems)
        if source is not None:
            attempts.append(ParsedAttempt(pid, index, entry.path, source))
    if k is not None:
        for pid, present in sorted(indices.items()):
            missing = sorted(set(range(1, k + 1)) - present)
            if missing:
                have = ", ".join(f"attempt_{i}.py" for i in sorted(present))
                problems.append(
                    f"attempts/{pid}/: has {have} but k={k}: every problem present needs exactly k "
                    f"attempts; add {', '.join(f'attempt_{i}.py' for i in missing)} or drop the "
                    f"folder."
                )

    trajectories: list[ParsedTrajectory] = []
    seen: dict[tuple[str, int], str] = {}
    for entry in sorted(by_kind["trajectory"], key=lambda e: e.path):
        parts = entry.path.split("/")
        match = TRAJECTORY_RE.fullmatch(parts[-1]) if len(parts) == 4 else None
        if match is None:
            problems.append(
                f"{entry.path}: not where a trajectory goes; name trajectories trajectories/"
                f"<category>/<name>/attempt_<i>.(json|jsonl|md|txt), beside attempts/<category>/"
                f"<name>/attempt_<i>.py."
            )
            continue
        pid, index, fmt = f"{parts[1]}/{parts[2]}", int(match.group(1)), match.group(2)
        if not problem_ok(pid, f"trajectories/{pid}"):
            continue
        if pid not in indices:
            problems.append(
                f"{entry.path}: a trajectory for a problem with no attempts; add attempts/{pid}/ or drop it."
            )
            continue
        if k is not None and index > k:
            problems.append(
                f"{entry.path}: attempt {index} is outside 1..k (k={k} in {manifest_name}); "
                f"drop it or renumber it to match its attempt."
            )
            continue
        if (pid, index) in seen:
            problems.append(
                f"{entry.path}: attempt {index} of {pid} already has {seen[pid, index]}; keep one "
                f"trajectory per attempt."
            )
            continue
        seen[pid, index] = entry.path
        text = _check_trajectory(entry.path, fmt, entry.data, problems)
        if text is not None:
            trajectories.append(ParsedTrajectory(pid, index, entry.path, fmt, text))

    if (
        manifest is not None
        and not indices
        and not refused_ids
        and not any(p.startswith("attempts/") for p in problems)
    ):
        problems.append(
            f"the archive holds no attempts; add attempts/<category>/<name>/attempt_<i>.py for i = 1..{manifest.k}."
        )
    if problems:
        raise refusal(problems)
    assert manifest is not None
    not_attempted = tuple(
        sorted(
            pid
            for pid, info in known.items()
            if pid not in indices
            and (_info(info, "suite") is None or _info(info, "suite") == manifest.suite)
            and _info(info, "is_active") is not False
            and (_info(info, "world_sizes") is None or world_size in _info(info, "world_sizes"))
        )
    )
    return ParsedRun(
        manifest=manifest,
        attempts=sorted(attempts, key=lambda a: (a.problem_id, a.index)),
        trajectories=sorted(trajectories, key=lambda t: (t.problem_id, t.index)),
        not_attempted=not_attempted,
    )
