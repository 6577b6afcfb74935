"""The host's view of a sandbox's processes (evaluator/host/watch.py): walking down from bubblewrap's process finds
every process in the sandbox, orphans included, as reading every process of the host would."""

import os
import shutil
import subprocess
import time

import pytest

from evaluator.host import watch


def _wait_for(pid: int, commands: set[str]) -> list[watch.Proc]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [p for p in watch.descendants(pid) if p.cmdline in commands]
        if len(found) >= len(commands):
            return found
        time.sleep(0.05)
    return found


def test_the_walk_finds_children_grandchildren_and_what_the_full_scan_finds():
    tree = subprocess.Popen(["bash", "-c", "sleep 30 & (sleep 31 & wait) & wait"])
    try:
        walked = _wait_for(tree.pid, {"sleep 30", "sleep 31"})
        assert sorted(p.cmdline for p in walked) == ["sleep 30", "sleep 31"]
        every = watch._children_of_every_process()
        scanned, stack = set(), list(every.get(tree.pid, []))
        while stack:
            pid = stack.pop()
            scanned.add(pid)
            stack.extend(every.get(pid, []))
        assert {p.pid for p in watch.descendants(tree.pid)} == scanned
    finally:
        for proc in watch.descendants(tree.pid):
            try:
                os.kill(proc.pid, 9)
            except ProcessLookupError:
                pass
        tree.kill()
        tree.wait()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"), reason="needs root and bubblewrap")
def test_an_orphan_in_a_pid_namespace_is_still_under_the_sandbox():
    # The daemon's parent exits at once; inside the namespace the orphan is adopted by its first process.
    box = subprocess.Popen(["bwrap", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "bash", "-c", "(setsid sleep 33 &) ; sleep 30"])
    try:
        found = _wait_for(box.pid, {"sleep 33"})
        assert [p.cmdline for p in found] == ["sleep 33"]
    finally:
        box.kill()
        box.wait()
