"""How the host names a failure from what the ranks reported and how they ended (evaluator/host/session.py): the
verdict must not depend on whether a rank's exit or its report reached the host first."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluator import wire
from evaluator.contract.profiles import get_profile
from evaluator.contract.result import Verdict
from evaluator.host import watch
from evaluator.host.session import Peer, Session
from evaluator.rank import RUNTIME_ERROR_EXIT


def _ended(tmp_path: Path, reports: dict[int, str | None], exits: dict[int, int]) -> Session:
    """A session of two ranks whose channels have closed: ``reports`` the error each reported (None: none),
    ``exits`` the status each ended with."""
    session = Session(tmp_path, get_profile("cpu-gloo-2"), tmp_path / "engine", tmp_path, tmp_path, tmp_path, 0)
    session.phase = "timing"
    for rank, message in reports.items():
        r, w = os.pipe()
        os.close(w)
        peer = Peer(rank=rank, commands=None, reports=wire.Lines(r))
        peer.reports.closed = True
        os.close(r)
        if message is not None:
            peer.add(
                {
                    "kind": "error",
                    "rank": rank,
                    "phase": "timing",
                    "category": "runtime",
                    "message": message,
                    "at": 1.0 + rank,
                }
            )
        session.ranks.append(peer)
    session.exits.update(exits)
    return session


def _errors(session: Session) -> list[dict]:
    return [m for p in session.ranks for m in p.of_kind("error")]


GLOO_ERROR = "RuntimeError: ProcessGroupGloo::allgather: invalid tensor size at index 0"


def test_ranks_that_reported_an_error_and_ended_for_it_failed_at_run_time_whatever_reached_the_host_first(tmp_path):
    session = _ended(tmp_path, {0: GLOO_ERROR, 1: GLOO_ERROR}, {0: RUNTIME_ERROR_EXIT, 1: RUNTIME_ERROR_EXIT})
    stop = session._failure(_errors(session), [0, 1])
    assert stop.verdict == Verdict.RUNTIME_ERROR
    assert "invalid tensor size" in stop.message and "rank 0" in stop.message


def test_a_rank_that_ended_its_process_without_a_report_is_refused(tmp_path):
    session = _ended(tmp_path, {0: None, 1: None}, {0: RUNTIME_ERROR_EXIT, 1: 0})
    stop = session._failure([], [0])
    assert stop.verdict == Verdict.REJECTED and "never end the process" in stop.message


def test_a_rank_that_died_is_the_cause_when_its_peer_only_reported_losing_it(tmp_path):
    session = _ended(
        tmp_path,
        {0: None, 1: "RuntimeError: Connection closed by peer"},
        {0: -signal.SIGSEGV, 1: RUNTIME_ERROR_EXIT},
    )
    stop = session._failure(_errors(session), [0, 1])
    assert stop.verdict == Verdict.RUNTIME_ERROR and "rank 0 died (signal SIGSEGV)" in stop.message


def test_a_ranks_feed_slot_can_grow_but_no_holder_can_shrink_or_seal_it(tmp_path):
    # The judge writes a call's inputs through its mapping of the slot while the rank holding the same descriptor may
    # be running (continued by a signal it arranged, say); a slot shrunk under that mapping killed the judge.
    import errno
    import fcntl

    session = Session(tmp_path, get_profile("cpu-gloo-2"), tmp_path / "engine", tmp_path, tmp_path, tmp_path, 0)
    session.world_size = 1
    session.private.mkdir()
    session._make_feed_slots()
    fd = os.open(f"/proc/self/fd/{session.feed_fds[0]}", os.O_RDWR)  # as the rank holds it: its own descriptor
    try:
        os.ftruncate(fd, 1 << 20)
        assert os.fstat(fd).st_size == 1 << 20
        for act in (lambda: os.ftruncate(fd, 4096), lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW)):
            try:
                act()
            except PermissionError as exc:
                assert exc.errno == errno.EPERM
            else:
                raise AssertionError("a holder of the feed slot changed what the judge relies on")
        assert os.fstat(fd).st_size == 1 << 20
    finally:
        os.close(fd)


@contextmanager
def _session_of_one_rank(tmp_path: Path) -> Iterator[tuple[Session, int]]:
    """A session whose rank 0 is a sleeping process, with a feed of its own and a peer's (files here); the session is
    left not frozen and the process ended after."""
    session = Session(tmp_path, get_profile("cpu-gloo-2"), tmp_path / "engine", tmp_path, tmp_path, tmp_path, 0)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name in ("feed", "peer"):
            (tmp_path / name).write_bytes(b"")
        own, peer = os.stat(tmp_path / "feed"), os.stat(tmp_path / "peer")
        session.rank_pids = {0: child.pid}
        session.feeds = {0: (own.st_dev, own.st_ino), 1: (peer.st_dev, peer.st_ino)}
        yield session, child.pid
    finally:
        session.frozen = False
        child.kill()
        child.wait()


def test_a_stop_reads_a_ranks_mappings_and_finds_its_tables_of_descriptors_once_for_all_its_checks(
    tmp_path, monkeypatch
):
    # A rank of 40,000 mappings costs the kernel about 30 ms a reading of its maps file, which the feeds' check and the
    # threads' check both need at every stop; its tables of descriptors (compared thread by thread with kcmp, then
    # listed) are needed by the feeds' check and the command channels'. Stopped, a process maps nothing new and makes
    # no thread, so one reading of each serves every check; running, each check reads anew.
    reads: list[tuple[str, int]] = []
    read, find = watch.read_maps_file, watch.descriptor_tables
    monkeypatch.setattr(watch, "read_maps_file", lambda pid: reads.append(("maps", pid)) or read(pid))
    monkeypatch.setattr(watch, "descriptor_tables", lambda pid: reads.append(("tables", pid)) or find(pid))
    with _session_of_one_rank(tmp_path) as (session, pid):
        for frozen in (False, True):
            reads.clear()
            session.frozen = frozen
            session._check_feeds("a call")
            watch.new_solution_threads(pid, set(), None, session._stop_maps)
            assert watch.command_copies(pid, 0, {"pipe:[1]"}, session._stop_tables) == []
            each = 1 if frozen else 2
            assert sorted(reads) == [("maps", pid)] * each + [("tables", pid)] * each
        session._continue()  # the sandbox runs again: the next stop reads anew
        assert session._maps_read == {} and session._tables_found == {}
