"""A job's build cache: what a sandbox sees at /cache is a file system of the job's own, of bounded size and file
count, filled from the solution's entry in the host's build cache (evaluator/host/build_cache.py) as the job starts
and emptied back into it as the job ends.

Bound at /cache directly, the entry lay on the host's disk with nothing to bound it while a job ran: a red team
reserved 24 GiB there in 21 ms with one ``fallocate`` (with FALLOC_FL_KEEP_SIZE the file's size stays 0, so the
per-file size limit never applies, and no page is written, so the memory cgroup never sees it), and any number of
files of the per-file limit could follow. A tmpfs of the job's own ends both: it refuses what passes JOB_CACHE_BYTES
or JOB_CACHE_FILES (ENOSPC), and its pages, written by the sandbox, count in the sandbox's memory cgroup.
``fallocate`` itself stays allowed: NCCL extends its shared-memory segments with it.

Builds of one solution are serialised by a lock of the host's on its entry (:func:`locked`), held by its prebuild
(evaluator/host/prebuild.py) and by its evaluation for their whole job: an evaluation that follows a build still
running on the host's build queue waits for it and then finds what it built, as it did when both bound the entry."""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluator.host import build_cache
from evaluator.host.folders import remove_tree, unmount
from evaluator.host.libc import libc

logger = logging.getLogger("arena.job_cache")

JOB_CACHE_BYTES = build_cache.ENTRY_MAX_BYTES  # what one solution's builds may hold, as the upkeep after a job allows
JOB_CACHE_FILES = 1 << 16  # Triton and Inductor write a few files a kernel; load_inline a dozen an extension
_MS_NOSUID, _MS_NODEV = 2, 4
LOCK_POLL_S = 0.05


class JobCacheError(OSError):
    """The job's build cache could not be made (the host cannot mount a file system: not root, say)."""


@contextmanager
def locked(entry: Path, wait_s: float) -> Iterator[bool]:
    """Holds the host's lock on a solution's build-cache entry (a file beside the entries, which the sandbox never
    sees) until the block ends, waiting at most ``wait_s`` for whoever holds it; yields whether it got it. Past the
    wait the block runs without it: a build that sleeps at its import must not hold a GPU host's next job longer than
    that job's own set-up could (the job then builds for itself, and whichever ends last leaves its builds)."""
    locks = entry.parent.parent / "locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(locks / entry.name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    logger.warning("went on without the lock of %s after %.0f s", entry, wait_s)
                    got = False
                    break
                time.sleep(LOCK_POLL_S)
        yield got
    finally:
        os.close(fd)  # the lock goes with it


def make(folder: Path, uid: int, gid: int, size: int = JOB_CACHE_BYTES, files: int = JOB_CACHE_FILES) -> None:
    """An empty folder at ``folder`` (made here), with a tmpfs of ``size`` bytes and ``files`` inodes mounted on it,
    owned by ``uid``:``gid``, mode 0700. JobCacheError when the mount is refused (the folder is removed again)."""
    folder.mkdir(mode=0o700)
    options = f"size={size},nr_inodes={files},mode=0700,uid={uid},gid={gid}"
    if libc().mount(b"tmpfs", os.fsencode(folder), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()) != 0:
        error = ctypes.get_errno()
        folder.rmdir()
        raise JobCacheError(
            f"a folder the sandbox writes (its build cache or its output) could not be given a file system of its "
            f"own ({os.strerror(error)}): the worker must run as root, as the sandbox needs it to"
        )


def remove(folder: Path) -> None:
    """Unmounts a folder :func:`make` made and removes it; a folder with nothing mounted is removed as it is. Never
    raises."""
    if folder.exists() and unmount(folder):
        remove_tree(folder)


def copy(source: Path, target: Path, uid: int, gid: int) -> int:
    """The build products below ``source`` (build_cache.is_product: regular files under the tools' folders, named as
    they name what they make) copied into ``target``, their folders made there, all owned by ``uid``:``gid``; a name
    already there is written over. Returns the bytes copied. Never raises.

    Left out, and logged (the first LOGGED_NAMES of them, then a count): anything else (links, FIFOs, devices, other
    files); a file with other names (hard links); a file with holes (sparse: a ninth red team's 2 GiB files of one
    page each would have been written out whole, 6 GiB to the host's disk in one evaluation, outside every limit);
    what lies deeper than MAX_DEPTH folders (1,200 nested folders once raised out of the evaluation and left the job's
    file system mounted). The copy stops, with one warning, at whichever comes first: JOB_CACHE_BYTES copied,
    MAX_FILES files and folders made for them, or MAX_WALKED names looked at. No link is followed: each folder is
    opened by descriptor, relative to its parent's, when its turn comes, and closed before the next (a thirteenth
    red team's 20,000 folders, each held open until walked, ran the host's process out of descriptors). A cache holds
    nothing a build cannot make again."""
    copied, files, walked, left = 0, 0, 0, 0
    made: set[Path] = set()  # folders known to be there in the target
    try:
        top = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0
    pending: list[tuple[str, ...]] = [()]
    try:
        while pending:
            parts = pending.pop()
            try:
                folder_fd = _open_below(top, parts)
            except OSError as exc:
                left = _left_out(left, parts, exc)
                continue
            try:
                try:
                    names = sorted(os.listdir(folder_fd))
                except OSError:
                    names = []
                for name in names:
                    here = (*parts, name)
                    walked += 1
                    if walked > MAX_WALKED:
                        raise _CopyFull(f"past the {MAX_WALKED} names a job's cache copy looks at")
                    try:
                        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                        if stat.S_ISDIR(info.st_mode) and len(here) < MAX_DEPTH:
                            pending.append(here)
                        elif stat.S_ISREG(info.st_mode) and build_cache.is_product(here):
                            # Folders count as files do: an eleventh red team's 4,000 chains of 15 folders, a file at
                            # the end of each, left 56,000 folders (235 MB) in the entry, which no cap on files saw.
                            if files + len(made) >= MAX_FILES:
                                raise _CopyFull(f"past the {MAX_FILES} files and folders a job's cache copies")
                            if copied + info.st_size > JOB_CACHE_BYTES:
                                raise _CopyFull(f"past the {JOB_CACHE_BYTES >> 20} MiB a job's cache copies")
                            if info.st_nlink > 1:
                                # One file under many names is written out once a name: 8,192 links to a 256 KiB file
                                # became 2 GiB in the entry. No build tool links its products.
                                raise OSError("a file with other names (hard links)")
                            copied += _copy_file(folder_fd, name, target, here, info, uid, gid, made)
                            files += 1
                        elif stat.S_ISDIR(info.st_mode):
                            raise OSError(f"deeper than {MAX_DEPTH} folders")
                        else:
                            raise OSError("not a build product")
                    except _CopyFull:
                        raise
                    except OSError as exc:
                        left = _left_out(left, here, exc)
            finally:
                if folder_fd != top:
                    os.close(folder_fd)
    except _CopyFull as exc:
        logger.warning("stopped a build cache's copy from %s: %s", source, exc)
    finally:
        os.close(top)
    if left > LOGGED_NAMES:
        logger.warning("left %d more names out of a build cache's copy from %s", left - LOGGED_NAMES, source)
    return copied


MAX_DEPTH = 16  # folders below a cache's top: the tools nest three or four
# Files one copy takes: a build makes tens (load_inline) to a few thousand (Triton's kernels, five files each); a
# tenth red team's 65,500 empty files, 15 folders deep, took 29 s to copy back and as long to copy in at the next run.
MAX_FILES = 8192
# Names one copy looks at, products or not: what it walks is bounded, not only what it writes.
MAX_WALKED = 4 * MAX_FILES
LOGGED_NAMES = 20  # names left out that one copy logs one by one: a thirteenth red team's made 20,017 lines a job


class _CopyFull(Exception):
    """A copy reached one of its limits: it stops there."""


def _open_below(top: int, parts: tuple[str, ...]) -> int:
    """The folder ``parts`` below the folder open at ``top``, opened one name at a time without following a link;
    only two descriptors are open at once."""
    fd = top
    try:
        for part in parts:
            below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            if fd != top:
                os.close(fd)
            fd = below
    except OSError:
        if fd != top:
            os.close(fd)
        raise
    return fd


def _left_out(left: int, parts: tuple[str, ...], why: OSError) -> int:
    """One more name left out of a copy, logged while fewer than LOGGED_NAMES were; returns the new count."""
    if left < LOGGED_NAMES:
        logger.warning("left %s out of a build cache's copy: %s", "/".join(parts), why)
    return left + 1


def _copy_file(
    folder_fd: int,
    name: str,
    target: Path,
    parts: tuple[str, ...],
    info: os.stat_result,
    uid: int,
    gid: int,
    made: set[Path],
) -> int:
    """One file's data copied to ``target``/``parts`` (its folders made, once each: ``made``), its holes left holes;
    OSError for a file with holes (sparse, or reserved and never written: a tenth red team's 1.9 GiB reserved with
    posix_fallocate, whose pages a tmpfs counts as allocated, was written out whole at every run)."""
    folder = target
    for part in parts[:-1]:
        folder = folder / part
        if folder in made:
            continue
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise OSError(f"{folder} is not a folder")
        if not folder.exists():
            folder.mkdir(mode=0o700)
            os.chown(folder, uid, gid)
        made.add(folder)
    path = folder / parts[-1]
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    try:
        if _has_holes(src, info.st_size):
            raise OSError("a file with holes")
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise OSError(f"{path} is not a plain file")
        dst = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, stat.S_IMODE(info.st_mode))
        try:
            done = 0
            while done < info.st_size:
                n = os.sendfile(dst, src, done, info.st_size - done)
                if n == 0:
                    break
                done += n
            os.fchown(dst, uid, gid)
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))  # the upkeep ranks entries by their newest file
            return done
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _has_holes(fd: int, size: int) -> bool:
    """Whether a file of ``size`` bytes has a hole before its end by its file system's account (SEEK_HOLE): a tmpfs
    counts pages reserved and never written as holes. One call, however many pieces the file is in."""
    return size > 0 and os.lseek(fd, 0, os.SEEK_HOLE) < size


@contextmanager
def job_cache(entry: Path, folder: Path, uid: int, gid: int, wait_s: float, made: bool = False) -> Iterator[Path]:
    """The job's build cache at ``folder`` (made and mounted here unless ``made`` says :func:`make` made it already,
    for a sandbox started ahead; filled from the solution's ``entry``), held under the entry's lock (:func:`locked`,
    waiting at most ``wait_s``); as the block ends, what the job left there is copied back into the entry and the
    folder removed. Yields ``folder``, the path to bind at /cache."""
    with locked(entry, wait_s):
        if not made:
            make(folder, uid, gid)
        try:
            copy(entry, folder, uid, gid)
            yield folder
        finally:
            try:
                copy(folder, entry, os.geteuid(), os.getegid())  # the entry is the host's (evaluate._cache_dir)
            finally:
                remove(folder)
