"""The container of a model run, read safely: a ``.zip`` or ``.tar.gz`` held **in memory only** (nothing is
extracted to disk), yielding each regular file's path, kind and bytes, or raising :class:`ArchiveError`.

Problems with the archive's *shape* (not an archive, too large, a zip bomb, unsafe paths, links, devices) stop the
reading at once; files over their kind's cap are collected so one upload reports all of them.

Defences, in order: the compressed size is capped before anything is parsed; a zip's end-of-central-directory
record is checked for the entry count before :mod:`zipfile` builds its list; the declared sizes of every zip
entry are summed and checked (total, per file, compression ratio, overlapping entries) before a byte is
inflated; every read is cut at the file's cap, so a header that lies cannot push more through; a tar.gz is read
as a stream through a reader that stops past the total cap (and past a ratio), with each member's declared size
checked before its data is read. Member paths are checked before their content: absolute paths, ``..``,
backslashes, symlinks, hard links, devices, FIFOs, sparse files, encrypted zip entries and duplicates are
refused. No Django imports.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable

from leaderboard import formats
from leaderboard.formats import KiB, MiB

MAX_ARCHIVE_BYTES = 20 * MiB  # the upload itself
MAX_TOTAL_BYTES = 100 * MiB  # everything inside, uncompressed
MAX_FILES = 5000  # entries of any kind, folders included
MAX_MANIFEST_BYTES = 64 * KiB
MAX_ATTEMPT_BYTES = 256 * KiB
MAX_TRAJECTORY_BYTES = 16 * MiB
MAX_RATIO = 100  # uncompressed / compressed, checked for anything over RATIO_FLOOR_BYTES
RATIO_FLOOR_BYTES = 1 * MiB
MAX_PROBLEMS_LISTED = 25  # content problems shown in one message


class ArchiveError(ValueError):
    """The archive cannot be accepted; ``problems`` lists every reason found (the message shows them)."""

    def __init__(self, message: str, problems: Iterable[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems is not None else [message]


def refusal(problems: list[str]) -> ArchiveError:
    """One ArchiveError for every problem found (its message lists at most MAX_PROBLEMS_LISTED)."""
    if len(problems) == 1:
        return ArchiveError(problems[0], problems)
    shown = problems[:MAX_PROBLEMS_LISTED]
    more = len(problems) - len(shown)
    text = f"the archive has {len(problems)} problems:\n" + "\n".join(f"- {p}" for p in shown)
    if more:
        text += f"\n- … and {more} more"
    return ArchiveError(text, problems)


@dataclass
class Limits:
    archive: int  # the compressed upload
    total: int
    files: int
    manifest: int
    attempt: int
    trajectory: int
    ratio: float


@dataclass
class Entry:
    path: str
    kind: str  # manifest, attempt, trajectory
    data: bytes


def _clean_path(raw: str, archive: str) -> str | None:
    """The member's path relative to the root, or None for the root itself; raises on anything unsafe."""
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        raise ArchiveError(f"{archive}: the entry {shown!r} has control characters in its name; rename it.")
    if "\\" in raw:
        raise ArchiveError(
            f"{archive}: the entry {shown!r} uses backslashes; build the archive with '/' "
            f"separators (Python's zipfile or tar do)."
        )
    if raw.startswith("/") or re.match(r"[A-Za-z]:", raw):
        raise ArchiveError(
            f"{archive}: the entry {shown!r} has an absolute path; archive paths must be "
            f"relative to the archive's root."
        )
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


def _cap(kind: str, limits: Limits) -> int:
    return {"manifest": limits.manifest, "attempt": limits.attempt, "trajectory": limits.trajectory}[kind]


class Collector:
    """Takes each file the container yields: checks counts, totals and caps, sorts out stray files (``classify``
    names a path's kind, ``manifest``, ``attempt`` or ``trajectory``, or None for a file with no place)."""

    def __init__(self, archive: str, limits: Limits, classify: Callable[[str], str | None]) -> None:
        self.archive = archive
        self.limits = limits
        self.classify = classify
        self.entries: list[Entry] = []
        self.problems: list[str] = []
        self.stray: list[str] = []
        self.seen: set[str] = set()
        self.count = 0
        self.total = 0

    def count_entry(self) -> None:
        self.count += 1
        if self.count > self.limits.files:
            raise ArchiveError(
                f"{self.archive}: more than {self.limits.files} entries; a model run needs one "
                f"manifest, k attempts per problem and their trajectories."
            )

    def want(self, path: str, size: int) -> str | None:
        """Whether to read a file of ``size`` declared bytes at ``path``; returns its kind or None."""
        if path in self.seen:
            raise ArchiveError(f"{self.archive}: {path} appears twice; an archive must hold each path once.")
        self.seen.add(path)
        self.total += size
        if self.total > self.limits.total:
            raise ArchiveError(
                f"{self.archive}: more than {formats.size(self.limits.total)} uncompressed; trim the "
                f"trajectories (they are optional) or split the run."
            )
        kind = self.classify(path)
        if kind is None:
            self.stray.append(path)
            return None
        cap = _cap(kind, self.limits)
        if size > cap:
            self.problems.append(
                f"{path}: {formats.size(size)} is over the {formats.size(cap)} limit for "
                f"{'an' if kind == 'attempt' else 'a'} {kind} file; shorten it."
            )
            return None
        return kind

    def add(self, path: str, kind: str, data: bytes) -> None:
        if len(data) > _cap(kind, self.limits):  # the header under-declared the size
            raise ArchiveError(
                f"{self.archive}: {path} holds more than its header declares; the archive is "
                f"corrupt or crafted. Rebuild it with zip or tar."
            )
        self.entries.append(Entry(path, kind, data))


def _zip_directory_check(data: bytes, archive: str, limits: Limits) -> None:
    """Reads the end-of-central-directory record, so a zip claiming a huge number of entries (or a huge
    directory) is refused before :mod:`zipfile` builds a Python object for each of them."""
    pos = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if pos < 0 or pos + 22 > len(data):
        return  # zipfile will say it is not a zip
    _, _, _, _, entries, cd_size, _, _ = struct.unpack("<4s4H2LH", data[pos : pos + 22])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF:
        loc = pos - 20
        if loc >= 0 and data[loc : loc + 4] == b"PK\x06\x07":
            (offset,) = struct.unpack("<Q", data[loc + 8 : loc + 16])
            if offset + 56 <= len(data) and data[offset : offset + 4] == b"PK\x06\x06":
                entries, cd_size = struct.unpack("<QQ", data[offset + 32 : offset + 48])
    if entries > limits.files or cd_size > limits.files * 1024:
        raise ArchiveError(
            f"{archive}: the zip declares {entries} entries ({formats.size(cd_size)} of directory); "
            f"the limit is {limits.files} entries."
        )


def _read_zip(data: bytes, archive: str, limits: Limits, collector: Collector) -> Collector:
    _zip_directory_check(data, archive, limits)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ArchiveError(
            f"{archive}: not a readable zip archive ({exc}); rebuild it with zip or Python's zipfile."
        ) from None
    infos = zf.infolist()
    if len(infos) > limits.files:
        raise ArchiveError(f"{archive}: {len(infos)} entries, more than the {limits.files} allowed.")
    # Every check on declared sizes and kinds first: nothing is inflated until the whole listing is sound.
    declared = sum(i.file_size for i in infos)
    if declared > limits.total:
        raise ArchiveError(
            f"{archive}: declares {formats.size(declared)} uncompressed, more than the "
            f"{formats.size(limits.total)} allowed; trim the trajectories or split the run."
        )
    if sum(i.compress_size for i in infos) > len(data):
        raise ArchiveError(
            f"{archive}: its entries overlap (they claim more compressed bytes than the file "
            f"holds), a zip-bomb construction; rebuild the archive with zip."
        )
    if declared > RATIO_FLOOR_BYTES and declared > limits.ratio * len(data):
        raise ArchiveError(
            f"{archive}: inflates {declared / len(data):.0f}× ({formats.size(declared)} from "
            f"{formats.size(len(data))}), past the {limits.ratio:.0f}× limit; this looks like a "
            f"zip bomb."
        )
    plan: list[tuple[zipfile.ZipInfo, str, str]] = []
    for info in infos:
        collector.count_entry()
        path = _clean_path(info.filename, archive)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveError(
                f"{archive}: {info.filename} is a symbolic link; archives may hold only regular "
                f"files (zip with --symlinks off, the default)."
            )
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise ArchiveError(
                f"{archive}: {info.filename} is a device, FIFO or socket; archives may hold only regular files."
            )
        if info.flag_bits & 0x1:
            raise ArchiveError(f"{archive}: {info.filename} is encrypted; upload an archive without a password.")
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > limits.ratio * max(info.compress_size, 1):
            raise ArchiveError(
                f"{archive}: {info.filename} inflates past {limits.ratio:.0f}× its compressed "
                f"size; this looks like a zip bomb."
            )
        if path is None or info.is_dir():
            continue
        kind = collector.want(path, info.file_size)
        if kind is not None:
            plan.append((info, path, kind))
    for info, path, kind in plan:
        try:
            with zf.open(info) as member:
                content = member.read(_cap(kind, limits) + 1)
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            OSError,
            RuntimeError,
            NotImplementedError,
            ValueError,
        ) as exc:
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
            self.failure = ArchiveError(
                f"{self.archive}: inflates past {formats.size(self.limit)}; an archive "
                f"may hold at most {formats.size(self.limit)} uncompressed. Trim the "
                f"trajectories or split the run."
            )
        elif self.total > RATIO_FLOOR_BYTES and self.total > self.ratio * self.compressed:
            self.failure = ArchiveError(
                f"{self.archive}: inflates past {self.ratio:.0f}× its compressed size; this looks like a gzip bomb."
            )
        if self.failure is not None:
            raise self.failure
        return chunk


def _read_tar_gz(data: bytes, archive: str, limits: Limits, collector: Collector) -> Collector:
    # Tar headers and padding: a 512-byte header and up to 511 bytes of padding per entry, plus the end blocks.
    stream = _CappedStream(data, archive, limits.total + (limits.files + 20) * 2 * KiB, limits.ratio)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tf:  # type: ignore[call-overload]
            for member in tf:
                collector.count_entry()
                path = _clean_path(member.name, archive)
                if member.issym() or member.islnk():
                    raise ArchiveError(
                        f"{archive}: {member.name} is a {'symbolic' if member.issym() else 'hard'} "
                        f"link; archives may hold only regular files (archive the files "
                        f"themselves, e.g. with tar -h)."
                    )
                if member.ischr() or member.isblk() or member.isfifo():
                    raise ArchiveError(
                        f"{archive}: {member.name} is a device or FIFO; archives may hold only regular files."
                    )
                if member.issparse():
                    raise ArchiveError(f"{archive}: {member.name} is a sparse file; archive it as a regular file.")
                if member.isdir():
                    continue
                if not member.isreg():
                    raise ArchiveError(
                        f"{archive}: {member.name} is neither a file nor a folder (tar type "
                        f"{member.type!r}); archives may hold only regular files."
                    )
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
        raise ArchiveError(
            f"{archive}: not a readable tar.gz archive ({exc}); build it with "
            f"`tar -czf run.tar.gz manifest.json attempts trajectories`."
        ) from None
    return collector


def read_container(
    data: bytes, archive: str, limits: Limits, classify: Callable[[str], str | None], *, layout: str
) -> Collector:
    """Every file of the archive ``data`` that ``classify`` gives a kind, read within ``limits``; ``layout`` is the
    sentence that says what a model run holds (shown when the bytes are no archive at all)."""
    if len(data) > limits.archive:
        raise ArchiveError(
            f"{archive}: {formats.size(len(data))} is more than the {formats.size(limits.archive)} an "
            f"upload may be; trim the trajectories (they are optional) or split the run."
        )
    collector = Collector(archive, limits, classify)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _read_zip(data, archive, limits, collector)
    if data[:2] == b"\x1f\x8b":
        return _read_tar_gz(data, archive, limits, collector)
    if len(data) > 262 and data[257:262] == b"ustar":
        raise ArchiveError(f"{archive}: an uncompressed tar; compress it (`tar -czf run.tar.gz ...`) or upload a .zip.")
    raise ArchiveError(
        f"{archive}: neither a .zip nor a .tar.gz archive; upload a model run as one of those ({layout})."
    )
