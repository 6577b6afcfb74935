"""Between two of the host's commands a rank's main thread waits in the engine's own read of its command channel,
called from serve(); a process that reads those commands with code of its own (Python here; a copy of the engine, or
native code, alike), or that calls the engine's read from code of its own, is told apart from outside, with it
stopped, by where it waits and what called the read."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import timer
from evaluator.host import engine_sites, watch

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def engine_path() -> str:
    return str(timer.build())


def _waiting(body: str, engine_path: str, tmp_path: Path) -> tuple[bool | None, str, bool | None, str]:
    """Starts a one-rank process that runs ``body`` with a pipe's read end as descriptor ``cmd``, waits until its
    main thread blocks reading it, stops it and asks the host's check; then asks again with another descriptor."""
    cmd_r, cmd_w = os.pipe()
    script = f"""
import os, torch, torch.distributed as dist
from evaluator import timer, wire
from evaluator.timer.protocol import open_engine
dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0, world_size=1)
engine = timer.load({engine_path!r})
read_fd, write_fd = os.pipe()
open_engine(engine, write_fd, dist.group.WORLD, torch.device("cpu"))
report_r, report_w = os.pipe()
engine.hold_report_channel(report_w)
feed = wire.Slot.open({str(tmp_path / "feed")!r}, writable=True, pinned=False)
out = wire.Slot.open({str(tmp_path / "out")!r}, writable=True, pinned=False)
cmd = {cmd_r}
{body}
"""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, pass_fds=(cmd_r,))
    os.close(cmd_r)
    try:
        deadline = time.monotonic() + 120
        while not watch.reading(proc.pid, cmd_r):
            assert proc.poll() is None, "the process ended before it waited"
            assert time.monotonic() < deadline, "the process never waited on its command channel"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGSTOP)
        while not watch.stopped(proc.pid):
            time.sleep(0.001)
        inode, site = os.stat(engine_path).st_ino, engine_sites.read_site(engine_path)
        here = watch.waits_for_command(proc.pid, cmd_r, engine_path, inode, site)
        other = watch.waits_for_command(proc.pid, cmd_r + 1, engine_path, inode, site)
        return (*here, *other)
    finally:
        proc.kill()
        proc.wait()
        os.close(cmd_w)


def test_the_engine_waiting_for_the_next_command_is_where_the_host_expects_it(engine_path, tmp_path):
    waits, _, other_fd, why = _waiting(
        "engine.serve(cmd, report_w, 0, lambda x: x, feed.fd, out.fd)", engine_path, tmp_path
    )
    assert waits is True
    assert other_fd is False and "not its command channel" in why


def test_commands_read_by_the_solutions_own_code_are_told_apart(engine_path, tmp_path):
    waits, why, _, _ = _waiting("os.read(cmd, 24)", engine_path, tmp_path)
    assert waits is False
    assert "read the command channel from" in why and "_arena_timer" not in why


def test_words_of_the_engines_planted_above_the_stack_pointer_do_not_pass_for_its_return_address(engine_path, tmp_path):
    # Extra arguments of a ctypes call land on the stack just above the stack pointer: addresses of the engine's code
    # there are not the read's caller, which is ctypes' own return address below them.
    body = """
import ctypes
libc = ctypes.CDLL(None)
E = next(int(l.split("-")[0], 16) + 0x40 for l in open("/proc/self/maps")
         if l.rstrip().endswith("_arena_timer.so") and " r-xp " in l)
buf = ctypes.create_string_buffer(24)
libc.read(ctypes.c_long(cmd), buf, ctypes.c_long(24), *[ctypes.c_long(0)] * 3, *[ctypes.c_long(E)] * 8)
"""
    waits, why, _, _ = _waiting(body, engine_path, tmp_path)
    assert waits is False
    assert "read the command channel from" in why and "_arena_timer" not in why


def test_the_engines_own_read_called_from_the_solutions_code_is_told_apart(engine_path, tmp_path):
    # The read instruction is the engine's, but what called it is ctypes': the solution cannot use it as a gadget.
    read_at = engine_sites._symbols(Path(engine_path).read_bytes(), (engine_sites.READ,))[engine_sites.READ]
    body = f"""
import ctypes
text = next((int(l.split("-")[0], 16), int(l.split()[2], 16)) for l in open("/proc/self/maps")
            if l.rstrip().endswith("_arena_timer.so") and " r-xp " in l)
read = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)(text[0] - text[1] + {read_at})
buf = ctypes.create_string_buffer(24)
read(cmd, buf, 24)
"""
    waits, why, _, _ = _waiting(body, engine_path, tmp_path)
    assert waits is False
    assert "through the engine's read, called from" in why and "_arena_timer" not in why
