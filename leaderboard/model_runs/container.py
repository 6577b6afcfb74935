"""Validation of a model-run archive before anything is stored.

A model run is one ``.zip`` or ``.tar.gz`` holding, at its root::

    manifest.json                                   (or manifest.toml) — who, what protocol, which hardware
    attempts/<category>/<name>/attempt_<i>.py       i = 1..k, exactly k for every problem present
    trajectories/<category>/<name>/attempt_<i>.jsonl  optional; .json, .jsonl, .md or .txt

:func:`read_archive` reads it **in memory only** (nothing is extracted to disk) and either returns a
:class:`ParsedRun` or raises :class:`ArchiveError`, whose message names the file, the field and what to do.
Problems with the archive's *shape* (not an archive, too large, a zip bomb, unsafe paths, links, devices) stop
the reading at once; problems with its *content* (manifest fields, unknown problems, attempt files) are
collected so one upload reports all of them (``ArchiveError.problems``).

Defences, in order: the compressed size is capped before anything is parsed; a zip's end-of-central-directory
record is checked for the entry count before :mod:`zipfile` builds its list; the declared sizes of every zip
entry are summed and checked (total, per file, compression ratio, overlapping entries) before a byte is
inflated; every read is cut at the file's cap, so a header that lies cannot push more through; a tar.gz is read
as a stream through a reader that stops past the total cap (and past a ratio), with each member's declared size
checked before its data is read. Member paths are checked before their content: absolute paths, ``..``,
backslashes, symlinks, hard links, devices, FIFOs, sparse files, encrypted zip entries and duplicates are
refused. This module has no Django imports; ``python -m leaderboard.archive`` writes an example archive or
checks one against the built-in suite.
"""

from __future__ import annotations

import ast
import datetime as dt
import difflib
import gzip
import io
import json
import math
import re
import stat
import struct
import sys
import tarfile
import tomllib
import zipfile
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from evaluator.contract.profiles import PROFILES
from leaderboard.metrics import PROTOCOL_MODES, Protocol

KiB = 1024
MiB = 1024 * KiB

MAX_ARCHIVE_BYTES = 20 * MiB  # the upload itself
MAX_TOTAL_BYTES = 100 * MiB  # everything inside, uncompressed
MAX_FILES = 5000  # entries of any kind, folders included
MAX_MANIFEST_BYTES = 64 * KiB
MAX_ATTEMPT_BYTES = 256 * KiB
MAX_TRAJECTORY_BYTES = 16 * MiB
MAX_RATIO = 100  # uncompressed / compressed, checked for anything over RATIO_FLOOR_BYTES
RATIO_FLOOR_BYTES = 1 * MiB
MAX_K = 100
MAX_PROBLEMS_LISTED = 25  # content problems shown in one message

MANIFEST_NAMES = ("manifest.json", "manifest.toml")
TRAJECTORY_EXTENSIONS = ("json", "jsonl", "md", "txt")
ATTEMPT_RE = re.compile(r"attempt_([1-9][0-9]*)\.py")
TRAJECTORY_RE = re.compile(r"attempt_([1-9][0-9]*)\.(" + "|".join(TRAJECTORY_EXTENSIONS) + ")")
SUITE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
LAYOUT = ("put manifest.json (or manifest.toml), attempts/<category>/<name>/attempt_<i>.py and optionally "
          "trajectories/<category>/<name>/attempt_<i>.jsonl at the archive's root")


class ArchiveError(ValueError):
    """The archive cannot be accepted; ``problems`` lists every reason found (the message shows them)."""

    def __init__(self, message: str, problems: Iterable[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems is not None else [message]


def _refuse(problems: list[str]) -> ArchiveError:
    if len(problems) == 1:
        return ArchiveError(problems[0], problems)
    shown = problems[:MAX_PROBLEMS_LISTED]
    more = len(problems) - len(shown)
    text = f"the archive has {len(problems)} problems:\n" + "\n".join(f"- {p}" for p in shown)
    if more:
        text += f"\n- … and {more} more"
    return ArchiveError(text, problems)


# --- what comes out ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Manifest:
    """The validated manifest; ``date`` is ``YYYY-MM-DD``."""

    model: str
    provider: str
    protocol: str
    k: int
    turn_budget: int
    tokens: int
    wall_time_s: float
    hardware: str
    date: str
    open_weights: bool
    notes: str = ""
    precision: str | None = None
    suite: str = "arena"

    def as_protocol(self) -> Protocol:
        """The :class:`~leaderboard.metrics.Protocol` every score of this run is shown with."""
        mode: Any = self.protocol
        return Protocol(mode, self.k, self.turn_budget, self.tokens, self.wall_time_s)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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


# --- reading the container -----------------------------------------------------------------------------------------

@dataclass
class _Limits:
    total: int
    files: int
    manifest: int
    attempt: int
    trajectory: int
    ratio: float


@dataclass
class _Entry:
    path: str
    kind: str  # manifest, attempt, trajectory
    data: bytes


def _human(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MiB".replace(".0 MiB", " MiB")
    if n >= KiB:
        return f"{n / KiB:.1f} KiB".replace(".0 KiB", " KiB")
    return f"{n} bytes"


def _clean_path(raw: str, archive: str) -> str | None:
    """The member's path relative to the root, or None for the root itself; raises on anything unsafe."""
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        raise ArchiveError(f"{archive}: the entry {shown!r} has control characters in its name; rename it.")
    if "\\" in raw:
        raise ArchiveError(f"{archive}: the entry {shown!r} uses backslashes; build the archive with '/' "
                           f"separators (Python's zipfile or tar do).")
    if raw.startswith("/") or re.match(r"[A-Za-z]:", raw):
        raise ArchiveError(f"{archive}: the entry {shown!r} has an absolute path; archive paths must be "
                           f"relative to the archive's root.")
    path = raw.rstrip("/")
    while path.startswith("./"):
        path = path[2:]
    if path in ("", "."):
        return None
    parts = path.split("/")
    if ".." in parts:
        raise ArchiveError(f"{archive}: the entry {shown!r} climbs out of the archive with '..'; refused.")
    if any(p in ("", ".") for p in parts):
        raise ArchiveError(f"{archive}: the entry {shown!r} has an empty or '.' path component; rename it.")
    return path


def _classify(path: str) -> str | None:
    """manifest, attempt, trajectory, or None for a file that has no place in a model run."""
    parts = path.split("/")
    if path in MANIFEST_NAMES:
        return "manifest"
    if parts[0] == "attempts":
        return "attempt"
    if parts[0] == "trajectories":
        return "trajectory"
    return None


def _cap(kind: str, limits: _Limits) -> int:
    return {"manifest": limits.manifest, "attempt": limits.attempt, "trajectory": limits.trajectory}[kind]


class _Collector:
    """Takes each file the container yields: checks counts, totals and caps, sorts out stray files."""

    def __init__(self, archive: str, limits: _Limits) -> None:
        self.archive = archive
        self.limits = limits
        self.entries: list[_Entry] = []
        self.problems: list[str] = []
        self.stray: list[str] = []
        self.seen: set[str] = set()
        self.count = 0
        self.total = 0

    def count_entry(self) -> None:
        self.count += 1
        if self.count > self.limits.files:
            raise ArchiveError(f"{self.archive}: more than {self.limits.files} entries; a model run needs one "
                               f"manifest, k attempts per problem and their trajectories.")

    def want(self, path: str, size: int) -> str | None:
        """Whether to read a file of ``size`` declared bytes at ``path``; returns its kind or None."""
        if path in self.seen:
            raise ArchiveError(f"{self.archive}: {path} appears twice; an archive must hold each path once.")
        self.seen.add(path)
        self.total += size
        if self.total > self.limits.total:
            raise ArchiveError(f"{self.archive}: more than {_human(self.limits.total)} uncompressed; trim the "
                               f"trajectories (they are optional) or split the run.")
        kind = _classify(path)
        if kind is None:
            self.stray.append(path)
            return None
        cap = _cap(kind, self.limits)
        if size > cap:
            self.problems.append(f"{path}: {_human(size)} is over the {_human(cap)} limit for "
                                 f"{'an' if kind == 'attempt' else 'a'} {kind} file; shorten it.")
            return None
        return kind

    def add(self, path: str, kind: str, data: bytes) -> None:
        if len(data) > _cap(kind, self.limits):  # the header under-declared the size
            raise ArchiveError(f"{self.archive}: {path} holds more than its header declares; the archive is "
                               f"corrupt or crafted. Rebuild it with zip or tar.")
        self.entries.append(_Entry(path, kind, data))

    def stray_problems(self) -> list[str]:
        if not self.stray:
            return []
        nested = [p for p in self.stray if p.rsplit("/", 1)[-1] in MANIFEST_NAMES]
        if nested:
            top = nested[0].rsplit("/", 1)[0]
            return [f"{nested[0]}: the manifest is not at the archive's root; archive the contents of {top}/, "
                    f"not the folder itself."]
        shown = ", ".join(self.stray[:10]) + (f" and {len(self.stray) - 10} more" if len(self.stray) > 10 else "")
        return [f"files outside manifest, attempts/ and trajectories/: {shown}; remove them ({LAYOUT})."]


def _zip_directory_check(data: bytes, archive: str, limits: _Limits) -> None:
    """Reads the end-of-central-directory record, so a zip claiming a huge number of entries (or a huge
    directory) is refused before :mod:`zipfile` builds a Python object for each of them."""
    pos = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if pos < 0 or pos + 22 > len(data):
        return  # zipfile will say it is not a zip
    _, _, _, _, entries, cd_size, _, _ = struct.unpack("<4s4H2LH", data[pos:pos + 22])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF:
        loc = pos - 20
        if loc >= 0 and data[loc:loc + 4] == b"PK\x06\x07":
            (offset,) = struct.unpack("<Q", data[loc + 8:loc + 16])
            if offset + 56 <= len(data) and data[offset:offset + 4] == b"PK\x06\x06":
                entries, cd_size = struct.unpack("<QQ", data[offset + 32:offset + 48])
    if entries > limits.files or cd_size > limits.files * 1024:
        raise ArchiveError(f"{archive}: the zip declares {entries} entries ({_human(cd_size)} of directory); "
                           f"the limit is {limits.files} entries.")


def _read_zip(data: bytes, archive: str, limits: _Limits) -> _Collector:
    _zip_directory_check(data, archive, limits)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ArchiveError(f"{archive}: not a readable zip archive ({exc}); rebuild it with zip or Python's "
                           f"zipfile.") from None
    infos = zf.infolist()
    if len(infos) > limits.files:
        raise ArchiveError(f"{archive}: {len(infos)} entries, more than the {limits.files} allowed.")
    # Every check on declared sizes and kinds first: nothing is inflated until the whole listing is sound.
    declared = sum(i.file_size for i in infos)
    if declared > limits.total:
        raise ArchiveError(f"{archive}: declares {_human(declared)} uncompressed, more than the "
                           f"{_human(limits.total)} allowed; trim the trajectories or split the run.")
    if sum(i.compress_size for i in infos) > len(data):
        raise ArchiveError(f"{archive}: its entries overlap (they claim more compressed bytes than the file "
                           f"holds), a zip-bomb construction; rebuild the archive with zip.")
    if declared > RATIO_FLOOR_BYTES and declared > limits.ratio * len(data):
        raise ArchiveError(f"{archive}: inflates {declared / len(data):.0f}× ({_human(declared)} from "
                           f"{_human(len(data))}), past the {limits.ratio:.0f}× limit; this looks like a zip bomb.")
    collector = _Collector(archive, limits)
    plan: list[tuple[zipfile.ZipInfo, str, str]] = []
    for info in infos:
        collector.count_entry()
        path = _clean_path(info.filename, archive)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveError(f"{archive}: {info.filename} is a symbolic link; archives may hold only regular "
                               f"files (zip with --symlinks off, the default).")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise ArchiveError(f"{archive}: {info.filename} is a device, FIFO or socket; archives may hold only "
                               f"regular files.")
        if info.flag_bits & 0x1:
            raise ArchiveError(f"{archive}: {info.filename} is encrypted; upload an archive without a password.")
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise ArchiveError(f"{archive}: {info.filename} inflates past {limits.ratio:.0f}× its compressed "
                               f"size; this looks like a zip bomb.")
        if path is None or info.is_dir():
            continue
        kind = collector.want(path, info.file_size)
        if kind is not None:
            plan.append((info, path, kind))
    for info, path, kind in plan:
        try:
            with zf.open(info) as member:
                content = member.read(_cap(kind, limits) + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError,
                ValueError) as exc:
            raise ArchiveError(f"{archive}: {path} cannot be read ({exc}); rebuild the archive.") from None
        collector.add(path, kind, content)
    return collector


class _CappedStream:
    """A gzip stream read in chunks that stops the whole read once too much comes out of it."""

    def __init__(self, data: bytes, archive: str, limit: int, ratio: float) -> None:
        self.gz = gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
        self.archive, self.limit, self.ratio = archive, limit, ratio
        self.compressed = len(data)
        self.total = 0
        self.failure: ArchiveError | None = None

    def read(self, size: int = -1) -> bytes:
        if self.failure is not None:
            raise self.failure
        if size is None or size < 0:
            size = 64 * KiB
        chunk = self.gz.read(min(size, 1 * MiB))
        self.total += len(chunk)
        if self.total > self.limit:
            self.failure = ArchiveError(f"{self.archive}: inflates past {_human(self.limit)}; an archive may hold "
                                        f"at most {_human(self.limit)} uncompressed. Trim the trajectories or "
                                        f"split the run.")
        elif self.total > RATIO_FLOOR_BYTES and self.total > self.ratio * self.compressed:
            self.failure = ArchiveError(f"{self.archive}: inflates past {self.ratio:.0f}× its compressed size; "
                                        f"this looks like a gzip bomb.")
        if self.failure is not None:
            raise self.failure
        return chunk


def _read_tar_gz(data: bytes, archive: str, limits: _Limits) -> _Collector:
    # Tar headers and padding: a 512-byte header and up to 511 bytes of padding per entry, plus the end blocks.
    stream = _CappedStream(data, archive, limits.total + (limits.files + 20) * 2 * KiB, limits.ratio)
    collector = _Collector(archive, limits)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tf:  # type: ignore[call-overload]
            for member in tf:
                collector.count_entry()
                path = _clean_path(member.name, archive)
                if member.issym() or member.islnk():
                    raise ArchiveError(f"{archive}: {member.name} is a {'symbolic' if member.issym() else 'hard'} "
                                       f"link; archives may hold only regular files (archive the files "
                                       f"themselves, e.g. with tar -h).")
                if member.ischr() or member.isblk() or member.isfifo():
                    raise ArchiveError(f"{archive}: {member.name} is a device or FIFO; archives may hold only "
                                       f"regular files.")
                if member.issparse():
                    raise ArchiveError(f"{archive}: {member.name} is a sparse file; archive it as a regular file.")
                if member.isdir():
                    continue
                if not member.isreg():
                    raise ArchiveError(f"{archive}: {member.name} is neither a file nor a folder (tar type "
                                       f"{member.type!r}); archives may hold only regular files.")
                if path is None:
                    continue
                kind = collector.want(path, member.size)
                if kind is None:
                    continue
                handle = tf.extractfile(member)
                content = handle.read(_cap(kind, limits) + 1) if handle is not None else b""
                collector.add(path, kind, content)
    except ArchiveError:
        raise
    except (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError, OSError, ValueError, struct.error) as exc:
        if stream.failure is not None:
            raise stream.failure from None
        raise ArchiveError(f"{archive}: not a readable tar.gz archive ({exc}); build it with "
                           f"`tar -czf run.tar.gz manifest.json attempts trajectories`.") from None
    return collector


# --- the manifest --------------------------------------------------------------------------------------------------

_FIELD_HINTS: dict[str, str] = {
    "model": '"model": the model\'s name, e.g. "gpt-x-2026-11"',
    "provider": '"provider": who serves or trained it, e.g. "OpenAI"',
    "protocol": f'"protocol": one of {", ".join(repr(m) for m in PROTOCOL_MODES)}',
    "k": '"k": attempts per problem, an integer from 1',
    "turn_budget": '"turn_budget": the agent\'s turns per attempt, 0 for zero-shot',
    "tokens": '"tokens": tokens the whole run spent, an integer',
    "wall_time_s": '"wall_time_s": seconds the whole run took',
    "hardware": f'"hardware": one of {", ".join(PROFILES)}',
    "date": '"date": the run\'s date, "YYYY-MM-DD"',
    "open_weights": '"open_weights": true or false',
    "notes": '"notes": free text',
    "precision": '"precision": e.g. "bf16"',
    "suite": '"suite": the problem suite, "arena" unless you ran an imported one such as "pkb"',
}
_REQUIRED = ("model", "provider", "protocol", "k", "turn_budget", "tokens", "wall_time_s", "hardware", "date",
             "open_weights")
_OPTIONAL = ("notes", "precision", "suite")


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table", type(None): "null"}.get(type(value), type(value).__name__)


def _decode_manifest(name: str, data: bytes, problems: list[str]) -> dict[str, Any] | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8.")
        return None
    if name.endswith(".json"):
        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            dupes = sorted({k for k in keys if keys.count(k) > 1})
            if dupes:
                raise ValueError(f"the field {dupes[0]!r} appears twice")
            return dict(items)

        def constant(token: str) -> Any:
            raise ValueError(f"{token} is not a JSON number")

        try:
            value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
        except json.JSONDecodeError as exc:
            problems.append(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
                            f"fix the syntax.")
            return None
        except (ValueError, RecursionError) as exc:
            problems.append(f"{name}: not valid JSON ({exc}); fix it.")
            return None
    else:
        try:
            value = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            problems.append(f"{name}: not valid TOML ({exc}); fix the syntax.")
            return None
    if not isinstance(value, dict):
        problems.append(f"{name}: must hold one object of fields (model, provider, protocol, ...), "
                        f"not {_type_name(value)}.")
        return None
    return value


def _parse_manifest(name: str, data: bytes, problems: list[str]) -> Manifest | None:
    """Checks every field, appending one problem per bad field; returns the manifest when all are good."""
    raw = _decode_manifest(name, data, problems)
    if raw is None:
        return None
    before = len(problems)

    def bad(key: str, why: str) -> None:
        problems.append(f"{name}: the field '{key}' {why}; set {_FIELD_HINTS[key]}.")

    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        problems.append(f"{name}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                        f"the fields are {', '.join(_REQUIRED + _OPTIONAL)}.")
    for key in _REQUIRED:
        if key not in raw:
            bad(key, "is missing")
    values: dict[str, Any] = {}

    def typed(key: str, kinds: tuple[type, ...], label: str) -> Any:
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            bad(key, f"must be {label}, not {_type_name(value)} ({value!r})")
            return None
        return value

    for key in ("model", "provider"):
        value = typed(key, (str,), "a string")
        if value is not None:
            if not value.strip() or len(value) > 200:
                bad(key, "must be 1 to 200 characters")
            else:
                values[key] = value.strip()
    protocol = typed("protocol", (str,), "a string")
    if protocol is not None:
        if protocol not in PROTOCOL_MODES:
            bad("protocol", f"is {protocol!r}")
        else:
            values["protocol"] = protocol
    for key, low, high in (("k", 1, MAX_K), ("turn_budget", 0, None), ("tokens", 0, None)):
        value = typed(key, (int,), "an integer")
        if value is not None:
            if value < low or (high is not None and value > high):
                bad(key, f"is {value}, outside {low}..{high if high is not None else '∞'}")
            else:
                values[key] = value
    if "turn_budget" in values and "protocol" in values:
        if values["protocol"] == "zero-shot" and values["turn_budget"] != 0:
            bad("turn_budget", f"is {values['turn_budget']} but the protocol is zero-shot")
            del values["turn_budget"]
        elif values["protocol"] == "agentic" and values["turn_budget"] < 1:
            bad("turn_budget", "is 0 but the protocol is agentic (an agent has at least one turn)")
            del values["turn_budget"]
    wall = typed("wall_time_s", (int, float), "a number")
    if wall is not None:
        if not math.isfinite(wall) or wall < 0:
            bad("wall_time_s", f"is {wall!r}, not a number of seconds from 0")
        else:
            values["wall_time_s"] = float(wall)
    hardware = typed("hardware", (str,), "a string")
    if hardware is not None:
        if hardware not in PROFILES:
            bad("hardware", f"is {hardware!r}, not a known hardware profile")
        else:
            values["hardware"] = hardware
    if "date" in raw:
        value = raw["date"]
        if isinstance(value, dt.datetime):
            bad("date", f"is a date and time ({value.isoformat()}); give the date only")
        elif isinstance(value, dt.date):
            values["date"] = value.isoformat()
        elif not isinstance(value, str):
            bad("date", f"must be a string, not {_type_name(value)} ({value!r})")
        else:
            try:
                if not DATE_RE.fullmatch(value):
                    raise ValueError
                values["date"] = dt.date.fromisoformat(value).isoformat()
            except ValueError:
                bad("date", f"is {value!r}, not a real date written YYYY-MM-DD")
    open_weights = typed("open_weights", (bool,), "true or false")
    if open_weights is not None:
        values["open_weights"] = open_weights
    notes = typed("notes", (str,), "a string")
    if notes is not None:
        if len(notes) > 20_000:
            bad("notes", "is longer than 20,000 characters")
        else:
            values["notes"] = notes
    precision = typed("precision", (str,), "a string")
    if precision is not None:
        if not precision.strip() or len(precision) > 32:
            bad("precision", "must be 1 to 32 characters")
        else:
            values["precision"] = precision.strip()
    suite = typed("suite", (str,), "a string")
    if suite is not None:
        if not SUITE_RE.fullmatch(suite):
            bad("suite", f"is {suite!r}, not a suite name (lower-case letters, digits, '-' and '_')")
        else:
            values["suite"] = suite
    if len(problems) > before:
        return None
    return Manifest(**values)


# --- attempts and trajectories -------------------------------------------------------------------------------------

def _info(value: Any, name: str) -> Any:
    """A problem's attribute, whether the caller passed registry dataclasses, model rows or plain dicts."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _check_source(path: str, data: bytes, problems: list[str]) -> str | None:
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        problems.append(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}); save the file "
                        f"as UTF-8.")
        return None
    source = source.removeprefix("\ufeff")
    if "\0" in source:
        line = source[:source.index("\0")].count("\n") + 1
        problems.append(f"{path}: not Python source (a NUL byte at line {line}); upload the .py file as text.")
        return None
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        problems.append(f"{path}: not valid Python at line {exc.lineno}: {exc.msg}; the file must be a Python "
                        f"module that parses.")
        return None
    except (RecursionError, MemoryError):
        problems.append(f"{path}: nests too deeply for the Python parser; simplify it.")
        return None
    top = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "solution" not in top:
        problems.append(f"{path}: defines no top-level function `solution`; define `def solution(...)` with the "
                        f"reference's signature at module level.")
        return None
    if isinstance(top["solution"], ast.AsyncFunctionDef):
        problems.append(f"{path}: line {top['solution'].lineno}: `solution` is async; the evaluator calls it as a "
                        f"plain function.")
        return None
    return source


def _check_trajectory(path: str, fmt: str, data: bytes, problems: list[str]) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
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
                        problems.append(f"{path}: line {number} is not a JSON value ({exc.msg}); a .jsonl file "
                                        f"holds one JSON value per line.")
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
    from evaluator.pkb import problem_for_solution_filename

    return problem_for_solution_filename(parts[1], [pid for pid in known if pid.startswith("pkb/")])


def read_archive(data: bytes, filename: str, known_problems: Mapping[str, Any] | Iterable[Any], *,
                 max_bytes: int = MAX_ARCHIVE_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES,
                 max_files: int = MAX_FILES, max_attempt_bytes: int = MAX_ATTEMPT_BYTES,
                 max_trajectory_bytes: int = MAX_TRAJECTORY_BYTES, max_manifest_bytes: int = MAX_MANIFEST_BYTES,
                 max_ratio: float = MAX_RATIO) -> ParsedRun:
    """Validates a model-run archive held in memory and returns what it holds; raises :class:`ArchiveError`.

    ``known_problems`` are the problems the portal accepts: ids, objects with an ``id``, or a mapping from id
    to anything with optional ``suite``, ``world_sizes`` and ``is_active`` (attributes or keys: registry ``Problem``
    objects, ``leaderboard.models.Problem`` rows and dicts all work); where present they refuse problems of
    another suite, problems that cannot run at the manifest's hardware's world size, and retired ones.
    """
    archive = filename or "the archive"
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("read_archive takes the archive's bytes")
    data = bytes(data)
    if len(data) > max_bytes:
        raise ArchiveError(f"{archive}: {_human(len(data))} is more than the {_human(max_bytes)} an upload may be; "
                           f"trim the trajectories (they are optional) or split the run.")
    limits = _Limits(total=max_total_bytes, files=max_files, manifest=max_manifest_bytes, attempt=max_attempt_bytes,
                     trajectory=max_trajectory_bytes, ratio=max_ratio)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        collector = _read_zip(data, archive, limits)
    elif data[:2] == b"\x1f\x8b":
        collector = _read_tar_gz(data, archive, limits)
    elif len(data) > 262 and data[257:262] == b"ustar":
        raise ArchiveError(f"{archive}: an uncompressed tar; compress it (`tar -czf run.tar.gz ...`) or upload "
                           f"a .zip.")
    else:
        raise ArchiveError(f"{archive}: neither a .zip nor a .tar.gz archive; upload a model run as one of "
                           f"those ({LAYOUT}).")
    return _validate(collector, known_problems)


def _validate(collector: _Collector, known_problems: Mapping[str, Any] | Iterable[Any]) -> ParsedRun:
    problems: list[str] = []
    if isinstance(known_problems, Mapping):
        known: Mapping[str, Any] = known_problems
    else:  # ids, or objects with an ``id`` (registry problems, model rows)
        known = {item if isinstance(item, str) else str(_info(item, "id")): None if isinstance(item, str) else item
                 for item in known_problems}
    by_kind: dict[str, list[_Entry]] = {"manifest": [], "attempt": [], "trajectory": []}
    for entry in collector.entries:
        by_kind[entry.kind].append(entry)

    manifest: Manifest | None = None
    manifests = sorted(e.path for e in collector.entries if e.kind == "manifest")
    oversized_manifest = any(p.startswith(MANIFEST_NAMES) for p in collector.problems)
    if len(manifests) > 1:
        problems.append("the archive holds both manifest.json and manifest.toml; keep one.")
    elif not manifests and not oversized_manifest and not any(
            p.rsplit("/", 1)[-1] in MANIFEST_NAMES for p in collector.stray):
        problems.append(f"manifest.json is missing at the archive's root; add it ({LAYOUT}; its fields are "
                           f"{', '.join(_REQUIRED)}, optionally {', '.join(_OPTIONAL)}).")
    else:
        for entry in by_kind["manifest"]:
            manifest = _parse_manifest(entry.path, entry.data, problems)
    problems += collector.problems + collector.stray_problems()
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
            why = (f"unknown problem {pid!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                   + "; folder names must be problem ids as the problems page lists them")
        else:
            info = known[pid]
            p_suite, sizes, active = _info(info, "suite"), _info(info, "world_sizes"), _info(info, "is_active")
            if suite is not None and p_suite is not None and p_suite != suite:
                why = f"{pid!r} belongs to suite {p_suite!r} but {manifest_name} says suite {suite!r}"
            elif active is False:
                why = f"{pid!r} is retired and takes no new attempts; drop its folder"
            elif world_size is not None and sizes is not None and world_size not in sizes:
                why = (f"{pid!r} runs on {', '.join(map(str, sizes))} ranks, not on the {world_size} of "
                       f"hardware {hardware!r}; drop its folder or change the hardware")
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
            problems.append(f"{entry.path}: not where an attempt goes; name attempts "
                            f"attempts/<category>/<name>/attempt_<i>.py, e.g. attempts/collectives/all_reduce/"
                            f"attempt_1.py, with i from 1 to k.")
            continue
        pid, index = f"{parts[1]}/{parts[2]}", int(match.group(1))
        if not problem_ok(pid, f"attempts/{pid}"):
            continue
        indices.setdefault(pid, set()).add(index)
        if k is not None and index > k:
            problems.append(f"{entry.path}: attempt {index} is outside 1..k (k={k} in {manifest_name}); "
                            f"number the attempts attempt_1.py to attempt_{k}.py.")
            continue
        source = _check_source(entry.path, entry.data, problems)
        if source is not None:
            attempts.append(ParsedAttempt(pid, index, entry.path, source))
    if k is not None:
        for pid, present in sorted(indices.items()):
            missing = sorted(set(range(1, k + 1)) - present)
            if missing:
                have = ", ".join(f"attempt_{i}.py" for i in sorted(present))
                problems.append(f"attempts/{pid}/: has {have} but k={k}: every problem present needs exactly k "
                                f"attempts; add {', '.join(f'attempt_{i}.py' for i in missing)} or drop the "
                                f"folder.")

    trajectories: list[ParsedTrajectory] = []
    seen: dict[tuple[str, int], str] = {}
    for entry in sorted(by_kind["trajectory"], key=lambda e: e.path):
        parts = entry.path.split("/")
        match = TRAJECTORY_RE.fullmatch(parts[-1]) if len(parts) == 4 else None
        if match is None:
            problems.append(f"{entry.path}: not where a trajectory goes; name trajectories trajectories/"
                            f"<category>/<name>/attempt_<i>.(json|jsonl|md|txt), beside attempts/<category>/"
                            f"<name>/attempt_<i>.py.")
            continue
        pid, index, fmt = f"{parts[1]}/{parts[2]}", int(match.group(1)), match.group(2)
        if not problem_ok(pid, f"trajectories/{pid}"):
            continue
        if pid not in indices:
            problems.append(f"{entry.path}: a trajectory for a problem with no attempts; add "
                            f"attempts/{pid}/ or drop it.")
            continue
        if k is not None and index > k:
            problems.append(f"{entry.path}: attempt {index} is outside 1..k (k={k} in {manifest_name}); "
                            f"drop it or renumber it to match its attempt.")
            continue
        if (pid, index) in seen:
            problems.append(f"{entry.path}: attempt {index} of {pid} already has {seen[pid, index]}; keep one "
                            f"trajectory per attempt.")
            continue
        seen[pid, index] = entry.path
        text = _check_trajectory(entry.path, fmt, entry.data, problems)
        if text is not None:
            trajectories.append(ParsedTrajectory(pid, index, entry.path, fmt, text))

    if manifest is not None and not indices and not refused_ids and not any(
            p.startswith("attempts/") for p in problems):
        problems.append(f"the archive holds no attempts; add attempts/<category>/<name>/attempt_<i>.py for i = 1.."
                        f"{manifest.k}.")
    if problems:
        raise _refuse(problems)
    assert manifest is not None
    not_attempted = tuple(sorted(
        pid for pid, info in known.items()
        if pid not in indices
        and (_info(info, "suite") is None or _info(info, "suite") == manifest.suite)
        and _info(info, "is_active") is not False
        and (_info(info, "world_sizes") is None or world_size in _info(info, "world_sizes"))
    ))
    return ParsedRun(manifest=manifest, attempts=sorted(attempts, key=lambda a: (a.problem_id, a.index)),
                     trajectories=sorted(trajectories, key=lambda t: (t.problem_id, t.index)),
                     not_attempted=not_attempted)


# --- writing one ---------------------------------------------------------------------------------------------------

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to a flat TOML manifest")


def manifest_toml(manifest: Mapping[str, Any]) -> str:
    """A flat manifest as TOML (the inverse of what :func:`read_archive` accepts)."""
    return "".join(f"{key} = {_toml_value(value)}\n" for key, value in manifest.items())


def build_archive(manifest: Mapping[str, Any] | str | bytes | None,
                  attempts: Mapping[tuple[str, int], str | bytes],
                  trajectories: Mapping[tuple[str, int] | tuple[str, int, str], str | bytes] | None = None, *,
                  fmt: str = "zip", manifest_format: str = "json",
                  extra_files: Mapping[str, str | bytes] | None = None) -> bytes:
    """Builds a model-run archive in memory (for tests, the docs' example and model builders' scripts).

    ``attempts`` maps ``(problem_id, i)`` to the source of ``attempts/<problem_id>/attempt_<i>.py``;
    ``trajectories`` maps ``(problem_id, i)`` (written as ``.jsonl``) or ``(problem_id, i, ext)`` to text.
    A ``manifest`` given as str or bytes is written as it is (to test malformed ones); None writes none.
    ``extra_files`` adds raw paths. ``fmt`` is "zip" or "tar.gz"; the output is byte-for-byte reproducible.
    """
    if fmt not in ("zip", "tar.gz"):
        raise ValueError(f"fmt must be 'zip' or 'tar.gz', not {fmt!r}")
    if manifest_format not in ("json", "toml"):
        raise ValueError(f"manifest_format must be 'json' or 'toml', not {manifest_format!r}")
    files: dict[str, bytes] = {}

    def put(path: str, content: str | bytes) -> None:
        files[path] = content.encode() if isinstance(content, str) else bytes(content)

    if manifest is not None:
        if isinstance(manifest, (str, bytes)):
            text: str | bytes = manifest
        elif manifest_format == "json":
            text = json.dumps(dict(manifest), indent=2, ensure_ascii=False) + "\n"
        else:
            text = manifest_toml(manifest)
        put(f"manifest.{manifest_format}", text)
    for (pid, index), source in sorted(attempts.items()):
        put(f"attempts/{pid}/attempt_{index}.py", source)
    for key, text in sorted((trajectories or {}).items()):
        pid, index, ext = key if len(key) == 3 else (*key, "jsonl")  # type: ignore[misc]
        put(f"trajectories/{pid}/attempt_{index}.{ext}", text)
    for path, content in (extra_files or {}).items():
        put(path, content)

    out = io.BytesIO()
    if fmt == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, content in files.items():
                info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, content)
    else:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
                for path, content in files.items():
                    info = tarfile.TarInfo(path)
                    info.size, info.mode, info.mtime = len(content), 0o644, 0
                    tf.addfile(info, io.BytesIO(content))
    return out.getvalue()


# --- an example, and a check model builders can run before uploading -----------------------------------------------

EXAMPLE_MANIFEST: dict[str, Any] = {
    "model": "example-model-2026-11", "provider": "Example Labs", "protocol": "agentic", "k": 2,
    "turn_budget": 40, "tokens": 2_100_000, "wall_time_s": 12_600, "hardware": "h200-nvlink-4",
    "date": "2026-11-29", "open_weights": True, "precision": "bf16",
    "notes": "Each attempt: one agent loop with the `arena eval` tool, at most 40 turns.",
}
EXAMPLE_ATTEMPTS: dict[tuple[str, int], str] = {
    ("collectives/all_reduce", 1): (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def solution(x: torch.Tensor) -> torch.Tensor:\n"
        "    out = x.clone()\n    dist.all_reduce(out)\n    return out\n"),
    ("collectives/all_reduce", 2): (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def solution(x: torch.Tensor) -> torch.Tensor:\n"
        "    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]\n"
        "    dist.all_gather(parts, x)\n    return torch.stack(parts).sum(0).to(x.dtype)\n"),
}
EXAMPLE_TRAJECTORIES: dict[tuple[str, int], str] = {
    ("collectives/all_reduce", 1): "\n".join(json.dumps(m) for m in (
        {"role": "user", "content": "Write solution(x) for collectives/all_reduce ..."},
        {"role": "assistant", "content": "def solution(x): ..."},
        {"role": "tool", "name": "arena eval", "content": "passed, speedup 1.00"},
    )) + "\n",
}


def example_archive(fmt: str = "zip") -> bytes:
    """A small valid model run (two attempts at collectives/all_reduce, one trajectory)."""
    return build_archive(EXAMPLE_MANIFEST, EXAMPLE_ATTEMPTS, EXAMPLE_TRAJECTORIES, fmt=fmt)


def main(argv: list[str] | None = None) -> int:
    """``python -m leaderboard.archive example run.zip|run.tar.gz`` or ``... check run.zip``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("example", "check"):
        print(main.__doc__, file=sys.stderr)
        return 2
    command, path = args
    if command == "example":
        with open(path, "wb") as fh:
            fh.write(example_archive("tar.gz" if path.endswith((".tar.gz", ".tgz")) else "zip"))
        print(f"wrote {path}")
        return 0
    from problems.registry import catalogue

    with open(path, "rb") as fh:
        payload = fh.read()
    try:
        run = read_archive(payload, path, catalogue())
    except ArchiveError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{path}: valid; {run.manifest.model} ({run.manifest.as_protocol().label()}), {len(run.attempts)} "
          f"attempts at {len(run.problem_ids)} problems, {len(run.trajectories)} trajectories, "
          f"{len(run.not_attempted)} problems not attempted.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
