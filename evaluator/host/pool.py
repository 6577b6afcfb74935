"""Sandboxes started ahead of their evaluation: on a worker that serves one evaluation after another
(``evaluator.host.worker.ArenaWarmWorker``, or ``ARENA_WARM_SANDBOXES=1``), each evaluation takes the pair held for its
profile (:func:`take`), and once it has replied the job runner starts the next one's judge and solution sandboxes
(``evaluator.host.evaluate.hold_next``, which calls :func:`hold`), which import the evaluator and torch and then wait
(evaluator/rank/spawn.py, ARENA_HOLD_FD). The next evaluation takes them instead of starting its own, so importing
torch (about 4 s on a GPU host) is no longer on its path, and starting them is not on the previous one's.

A held pair knows nothing of any solution: its working directory has an empty solution folder and an empty build
cache of its own (a file system of bounded size, evaluator/host/job_cache.py). When it is taken, the solution's file
is written into the first, and the solution's entry of the host's build cache is copied into the second (and what
the evaluation built copied back when it ends), so no solution ever sees another's builds. One pair is held per
profile; an imported problem (whose judge sees its suite's files) and a solution that builds extensions (whose build
may be running ahead on the build queue) always start their own."""

from __future__ import annotations

import atexit
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evaluator.contract.profiles import HardwareProfile
from evaluator.host import job_cache, sandbox
from evaluator.host.folders import job_folder_prefix, remove_tree
from evaluator.host.session import Session

ENV = "ARENA_WARM_SANDBOXES"


@dataclass
class Held:
    session: Session
    workdir: Path
    cache: Path  # the pair's own, empty build cache folder, bound at /cache


_held: dict[str, Held] = {}
_wanted: dict[str, HardwareProfile] = {}  # the profiles whose next evaluation wants a pair started ahead
_drain_registered = False


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def enable() -> None:
    os.environ[ENV] = "1"


def take(profile: HardwareProfile, *, usable: bool = True) -> Held | None:
    """The pair held for ``profile`` (it is no longer held), or None: none is held, or this evaluation cannot use one
    (``usable`` False: it starts its own, and the pair stays held). Either way the next evaluation on ``profile`` will
    want a pair: :func:`wanted` names the profile until the job runner has started it."""
    _wanted[profile.name] = profile
    if not usable:
        return None
    held = _held.pop(profile.name, None)
    if held is not None and (
        held.session.box is None
        or held.session.box.poll() is not None
        or any(p.poll() is not None for p in held.session.judge_procs)
    ):
        discard(held)  # it ended while waiting (the host killed it, say)
        return None
    return held


def wanted() -> list[HardwareProfile]:
    """The profiles whose next evaluation wants a pair started ahead (each evaluation that took, or could not use, the
    pair held for its profile names it once): the job runner starts them, and they are no longer wanted."""
    profiles = list(_wanted.values())
    _wanted.clear()
    return profiles


def hold(profile: HardwareProfile, start: Callable[[Path, Path], Session], workdir_parent: str | None) -> None:
    """Starts the next evaluation's pair for ``profile`` with ``start(workdir, cache)``, unless one is held."""
    if profile.name in _held:
        return
    workdir = Path(tempfile.mkdtemp(prefix=job_folder_prefix("eval"), dir=workdir_parent))
    # The pair's /cache: a file system of the job's own (evaluator/host/job_cache.py), which the evaluation that takes
    # the pair fills from its solution's entry and empties back into it.
    cache = workdir / "cache"
    try:
        job_cache.make(cache, sandbox.SANDBOX_UID, sandbox.SANDBOX_GID)
        session = start(workdir, cache)
    except Exception:
        job_cache.remove(cache)
        remove_tree(workdir)
        raise
    global _drain_registered
    if not _drain_registered:
        atexit.register(drain)  # the held sandboxes die with the worker anyway; their folders are removed here
        _drain_registered = True
    _held[profile.name] = Held(session, workdir, cache)


def wait_ready(profile: HardwareProfile, timeout_s: float) -> bool:
    """True once the pair held for ``profile`` has imported torch (False: none held, or not within ``timeout_s``)."""
    held = _held.get(profile.name)
    return held is not None and held.session.wait_imported(timeout_s)


def discard(held: Held) -> None:
    held.session.close()
    job_cache.remove(held.cache)
    remove_tree(held.workdir)


def drain() -> None:
    """Ends every held pair (a worker that stops, a test that is done); no profile is wanted any more."""
    _wanted.clear()
    while _held:
        discard(_held.popitem()[1])
