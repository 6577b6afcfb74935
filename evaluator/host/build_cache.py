"""The build cache is the host's, never a solution's storage. A solution's sandbox binds its own entry
(``<cache root>/solutions/<hash of its source>``) at /cache, where load_inline, Triton and Inductor build; after every
job the worker (evaluator/host/worker.py) runs :func:`maintain`:

- in every entry, only what those tools build stays: regular files, below ``torch_extensions/``, ``triton/`` or
  ``inductor/``, named as the tools name their products (sources they write, objects, libraries, build files, their
  metadata). Anything else — other folders or files, links, FIFOs, devices — is removed;
- an entry larger than ENTRY_MAX_BYTES after that is removed whole;
- while the entries together pass the total cap (``ARENA_CACHE_MAX_BYTES``, default CACHE_MAX_BYTES), the least
  recently used ones are removed whole.

The walk never follows a link and works through descriptors of the folders it has opened (``dir_fd``), so a
sandbox that renames folders under it cannot turn a removal into one outside the cache."""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from evaluator import timer as compiled_timer

logger = logging.getLogger("arena.build_cache")

GiB = 1 << 30
CACHE_MAX_BYTES = 20 * GiB  # every entry together; ARENA_CACHE_MAX_BYTES overrides
ENTRY_MAX_BYTES = 2 * GiB  # one solution's builds (a ThunderKittens build is tens of MB)
TOOLS = ("torch_extensions", "triton", "inductor")  # TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR
# What the tools write: load_inline's sources, build.ninja and ninja's logs, objects and the library, its lock;
# Triton's kernels in each stage, their metadata and its launcher; Inductor's generated code and libraries.
PRODUCT_SUFFIXES = (
    ".so",
    ".o",
    ".cpp",
    ".cu",
    ".cuh",
    ".c",
    ".h",
    ".hpp",
    ".ninja",
    ".ninja_deps",
    ".ninja_log",
    ".json",
    ".cubin",
    ".ptx",
    ".ttir",
    ".ttgir",
    ".llir",
    ".source",
    ".fatbin",
    ".py",
    ".lock",
)
PRODUCT_NAMES = ("build.ninja", ".ninja_deps", ".ninja_log", "lock")


def cache_max_bytes() -> int:
    raw = os.environ.get("ARENA_CACHE_MAX_BYTES", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else CACHE_MAX_BYTES


def is_product(parts: tuple[str, ...]) -> bool:
    """Whether a regular file at ``parts`` (relative to an entry) is something a build tool makes there."""
    if len(parts) < 2 or parts[0] not in TOOLS:
        return False
    name = parts[-1]
    return name in PRODUCT_NAMES or name.endswith(PRODUCT_SUFFIXES)


@dataclass
class Entry:
    path: Path
    bytes: int = 0
    last_used: float = 0.0  # the newest modification inside it
    removed: int = 0  # things that were not build products


def _remove_all(dir_fd: int) -> None:
    """Empties the folder open at ``dir_fd`` (without following any link)."""
    for item in list(os.scandir(dir_fd)):
        if item.is_dir(follow_symlinks=False):
            try:
                sub = os.open(item.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                _remove_all(sub)
            finally:
                os.close(sub)
            os.rmdir(item.name, dir_fd=dir_fd)
        else:
            os.unlink(item.name, dir_fd=dir_fd)


def _tidy(dir_fd: int, parts: tuple[str, ...], entry: Entry) -> None:
    for item in list(os.scandir(dir_fd)):
        here = parts + (item.name,)
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        entry.last_used = max(entry.last_used, st.st_mtime)
        if stat.S_ISDIR(st.st_mode) and (len(here) > 1 or item.name in TOOLS):
            try:
                sub = os.open(item.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                _tidy(sub, here, entry)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and is_product(here):
            entry.bytes += st.st_blocks * 512
        else:  # not a build product: a stray folder, a file, a link, a FIFO, a device node
            try:
                if stat.S_ISDIR(st.st_mode):
                    sub = os.open(item.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                    try:
                        _remove_all(sub)
                    finally:
                        os.close(sub)
                    os.rmdir(item.name, dir_fd=dir_fd)
                else:
                    os.unlink(item.name, dir_fd=dir_fd)
                entry.removed += 1
            except OSError as exc:
                logger.warning("build cache: could not remove %s: %s", "/".join(here), exc)


def tidy(path: Path) -> Entry:
    """Removes from one entry whatever is not a build product; returns what stays (size, last use)."""
    entry = Entry(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return entry
    try:
        entry.last_used = os.fstat(fd).st_mtime
        _tidy(fd, (), entry)
    finally:
        os.close(fd)
    return entry


def remove_entry(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        _remove_all(fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def maintain(root: Path | None = None, cap: int | None = None) -> dict[str, int]:
    """Tidies every entry under ``root``/solutions, then removes entries past their own cap and, the least recently
    used first, entries past the total cap. Returns counts for the worker's log."""
    if root is None:
        root = compiled_timer.cache_dir()  # the evaluations' cache root (evaluator/host/evaluate.py)
    cap = cache_max_bytes() if cap is None else cap
    solutions = root / "solutions"
    done = {"tidied": 0, "removed_files": 0, "evicted": 0, "bytes": 0}
    try:
        names = sorted(os.listdir(solutions))
    except OSError:
        return done
    entries = []
    for name in names:
        path = solutions / name
        if not path.is_dir() or path.is_symlink():
            continue
        entry = tidy(path)
        done["tidied"] += 1
        done["removed_files"] += entry.removed
        if entry.bytes > ENTRY_MAX_BYTES:
            remove_entry(path)
            done["evicted"] += 1
            continue
        entries.append(entry)
    total = sum(e.bytes for e in entries)
    for entry in sorted(entries, key=lambda e: e.last_used):
        if total <= cap:
            break
        remove_entry(entry.path)
        total -= entry.bytes
        done["evicted"] += 1
    done["bytes"] = total
    return done


def maintain_logged() -> None:
    """:func:`maintain`, for the worker after each job: logged, never raising."""
    started = time.monotonic()
    try:
        done = maintain()
    except Exception:  # noqa: BLE001 - the cache's upkeep must never end the worker
        logger.exception("build cache upkeep failed")
        return
    if done["removed_files"] or done["evicted"]:
        logger.info(
            "build cache: removed %d non-build item(s), evicted %d entr(ies); %d bytes kept (%.2f s)",
            done["removed_files"],
            done["evicted"],
            done["bytes"],
            time.monotonic() - started,
        )
