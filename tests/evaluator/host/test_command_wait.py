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


def _one_rank(
    body: str, engine_path: str, tmp_path: Path, cmd_r: int, extra_fds: tuple[int, ...] = (), stdout: int | None = None
) -> subprocess.Popen:
    """A one-rank process with the engine opened on CPU, its report channel held and its slots open, that runs
    ``body`` with ``cmd_r`` (a pipe's read end it inherits) as descriptor ``cmd``, and ``extra_fds`` inherited."""
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
    return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, pass_fds=(cmd_r, *extra_fds), stdout=stdout)


def _waiting(body: str, engine_path: str, tmp_path: Path) -> tuple[bool | None, str, bool | None, str]:
    """Starts a one-rank process that runs ``body`` with a pipe's read end as descriptor ``cmd``, waits until its
    main thread blocks reading it, stops it and asks the host's check; then asks again with another descriptor."""
    cmd_r, cmd_w = os.pipe()
    proc = _one_rank(body, engine_path, tmp_path, cmd_r)
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


def _stopped_code_check(body: str, engine_path: str, tmp_path: Path) -> str | None:
    """Starts a process that loads the engine, runs ``body`` and prints "ready"; stops it and asks the host whether
    the engine's code in it is still the built file's."""
    script = f"""
import ctypes, mmap, os, sys, torch
from evaluator import timer
engine = timer.load({engine_path!r})
{body}
print("ready", flush=True)
sys.stdin.read()
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGSTOP)
        while not watch.stopped(proc.pid):
            time.sleep(0.001)
        return watch.engine_code_changed(
            proc.pid,
            engine_path,
            os.stat(engine_path).st_ino,
            engine_sites.built_bytes(engine_path),
            engine_sites.constant_extents(engine_path),
        )
    finally:
        proc.kill()
        proc.wait()


def test_the_engines_code_in_a_rank_is_the_built_file_until_the_solution_patches_it(engine_path, tmp_path):
    assert _stopped_code_check("", engine_path, tmp_path) is None
    # A byte of the engine's code rewritten in place, after making its page writable: serve() or a step could be
    # patched so (its checks, its reports), and the code would still be mapped from the engine's file.
    patch = """
start, offset = next((int(l.split("-")[0], 16), int(l.split()[2], 16)) for l in open("/proc/self/maps")
                     if l.rstrip().endswith("_arena_timer.so") and " r-xp " in l)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.mprotect(ctypes.c_void_p(start), mmap.PAGESIZE, 7) == 0, ctypes.get_errno()
byte = ctypes.c_ubyte.from_address(start + 16)
byte.value ^= 0xFF
libc.mprotect(ctypes.c_void_p(start), mmap.PAGESIZE, 5)
"""
    changed = _stopped_code_check(patch, engine_path, tmp_path)
    assert changed is not None and "differs from the file the host built" in changed


def test_a_copy_of_the_command_channel_passed_over_a_socket_is_found(tmp_path):
    # The channel lock sees dup, dup2, dup3 and fcntl; a descriptor sent to itself over a Unix socket (SCM_RIGHTS)
    # is a copy made without them, for a thread to read the host's commands from.
    cmd_r, cmd_w = os.pipe()
    script = f"""
import os, socket, sys
a, b = socket.socketpair(socket.AF_UNIX)
print("alone", flush=True)
sys.stdin.readline()
socket.send_fds(a, [b"x"], [{cmd_r}])
_, fds, _, _ = socket.recv_fds(b, 1, 1)
print(fds[0], flush=True)
sys.stdin.read()
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], pass_fds=(cmd_r,), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "alone"
        channel = watch.command_channel(proc.pid, cmd_r)
        assert channel is not None and watch.command_copies(proc.pid, cmd_r, {channel}) == []
        proc.stdin.write("send\n")
        proc.stdin.flush()
        copy = int(proc.stdout.readline())
        assert watch.command_copies(proc.pid, cmd_r, {channel}) == [copy]
        # A peer's command pipe, held by this process, is a copy too (its own descriptor of it included).
        assert watch.command_copies(proc.pid, -1, {channel}) == sorted([cmd_r, copy])
    finally:
        proc.kill()
        proc.wait()
        os.close(cmd_r)
        os.close(cmd_w)


def test_names_that_are_not_utf8_neither_blind_the_checks_nor_end_the_host(engine_path, tmp_path):
    # A file of the solution's named with bytes that are not UTF-8, mapped into the rank, and a thread name likewise:
    # the host's reading of the rank's map and threads goes on, and the engine's wait is still seen as the engine's.
    odd = os.fsencode(str(tmp_path)) + b"/\xff\xfe-mapped"
    body = f"""
import mmap
with open({odd!r}, "wb") as f:
    f.write(bytes(mmap.PAGESIZE))
held = mmap.mmap(os.open({odd!r}, os.O_RDONLY), mmap.PAGESIZE, prot=mmap.PROT_READ)
with open(f"/proc/self/task/{{os.getpid()}}/comm", "wb") as f:
    f.write(b"\\xff\\xfe-rank")
engine.serve(cmd, report_w, 0, lambda x: x, feed.fd, out.fd)
"""
    waits, why, _, _ = _waiting(body, engine_path, tmp_path)
    assert waits is True, why


def test_the_engines_constant_data_is_compared_too_and_a_gone_rank_is_no_error(engine_path, tmp_path):
    # The names of the report's fields are constant data: renamed in place, the host would read no aliasing, no
    # re-pointed input. (The writable segment, the engine's state, differs in every process and is not compared.)
    patch = """
data = open({path!r}, "rb").read()
at = data.index(b"inputs_swapped")
start, offset = next((int(l.split("-")[0], 16), int(l.split()[2], 16)) for l in open("/proc/self/maps")
                     if l.rstrip().endswith("_arena_timer.so") and int(l.split()[2], 16) <= at
                     and int(l.split("-")[1].split()[0], 16) - int(l.split("-")[0], 16) + int(l.split()[2], 16) > at)
page = (start + at - offset) & ~(mmap.PAGESIZE - 1)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.mprotect(ctypes.c_void_p(page), mmap.PAGESIZE, 3) == 0, ctypes.get_errno()
ctypes.c_ubyte.from_address(start + at - offset).value = ord("X")
""".format(path=engine_path)
    changed = _stopped_code_check(patch, engine_path, tmp_path)
    assert changed is not None and "differs from the file the host built" in changed
    no_such = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    assert watch.engine_code_changed(no_such, engine_path, 0, b"", [(0, 1)]) is None


def test_the_engines_tables_of_addresses_are_compared_with_what_they_held_before_the_solution(engine_path, tmp_path):
    # Linked with full RELRO, the loader's table of library addresses is filled at load and then read-only; the driver
    # table, and what the engine sets when opened (its backend, its key, its descriptors: the last word is a signal
    # disposition), are set at open(). A solution that points an entry at code of its own (the clock the engine
    # reads, say) runs inside the engine at every call of it: what the host read before the solution loaded no longer
    # matches.
    extents = engine_sites.fixed_extents(engine_path)
    inode = os.stat(engine_path).st_ino
    script = f"""
import ctypes, mmap, os, sys, torch
from evaluator import timer
engine = timer.load({engine_path!r})
print("opened", flush=True)
what = sys.stdin.readline().strip()
base = next(int(l.split("-")[0], 16) for l in open("/proc/self/maps")
            if l.rstrip().endswith("_arena_timer.so") and int(l.split()[2], 16) == 0)
libc = ctypes.CDLL(None, use_errno=True)
start, end = {extents}[{{"table": 0, "driver": 1, "opened": 2}}.get(what, 0)]
if what in ("table", "driver", "opened"):
    page = (base + start) & ~(mmap.PAGESIZE - 1)
    assert libc.mprotect(ctypes.c_void_p(page), base + end - page, 3) == 0, ctypes.get_errno()
    word = ctypes.c_uint64.from_address(base + end - 8)
    word.value ^= 0xFF
print("done", flush=True)
sys.stdin.read()
"""
    found = {}
    for what in ("nothing", "table", "driver", "opened"):
        proc = subprocess.Popen(
            [sys.executable, "-c", script], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline().strip() == "opened"
            before = watch.engine_fixed(proc.pid, engine_path, inode, extents)
            proc.stdin.write(what + "\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "done"
            os.kill(proc.pid, signal.SIGSTOP)
            while not watch.stopped(proc.pid):
                time.sleep(0.001)
            found[what] = before is not None and watch.engine_fixed(proc.pid, engine_path, inode, extents) == before
        finally:
            proc.kill()
            proc.wait()
    assert found == {"nothing": True, "table": False, "driver": False, "opened": False}


def test_a_rank_whose_engine_guard_was_cleared_is_told_apart(engine_path, tmp_path):
    # The guard is set from serve()'s start: a rank waiting for a command in serve() holds it set. A solution that
    # clears it (here during a call, since no Python thread runs while the engine waits) could call the engine's steps
    # from inside its own call and write every report itself.
    flag = engine_sites.serving_flag(engine_path)
    inode = os.stat(engine_path).st_ino
    found = {}
    for clear in (False, True):
        mark = tmp_path / f"called_{clear}"
        body = f"""
import ctypes, pathlib
base = next(int(l.split('-')[0], 16) for l in open('/proc/self/maps')
            if l.rstrip().endswith('_arena_timer.so') and int(l.split()[2], 16) == 0)
guard = ctypes.c_bool.from_address(base + {flag})
def solve(x):
    if {clear}:
        guard.value = False
    pathlib.Path({str(mark)!r}).touch()
    return x
feed.write([torch.zeros(4)])
engine.serve(cmd, report_w, 0, solve, feed.fd, out.fd)
"""
        found[clear] = _serving_after_a_call(body, engine_path, tmp_path / str(clear), inode, flag, mark)
    assert found == {False: True, True: False}


def _serving_after_a_call(
    body: str, engine_path: str, tmp_path: Path, inode: int, flag: int, mark: Path
) -> bool | None:
    """Whether a rank waiting in serve() after one call (which touches ``mark``) holds its guard set, read with it
    stopped."""
    tmp_path.mkdir()
    cmd_r, cmd_w = os.pipe()
    proc = _one_rank(body, engine_path, tmp_path, cmd_r)
    os.close(cmd_r)
    try:
        _wait_until(lambda: watch.reading(proc.pid, cmd_r), proc, "the process never waited on its command channel")
        os.write(cmd_w, timer.command(timer.CALL))
        _wait_until(mark.exists, proc, "the call never ran")
        # Read only from inside the call on: the next wait is the one after the call.
        _wait_until(lambda: watch.reading(proc.pid, cmd_r), proc, "the process never waited after its call")
        os.kill(proc.pid, signal.SIGSTOP)
        while not watch.stopped(proc.pid):
            time.sleep(0.001)
        return watch.engine_serving(proc.pid, engine_path, inode, flag)
    finally:
        proc.kill()
        proc.wait()
        os.close(cmd_w)


def _wait_until(state, proc: subprocess.Popen, never: str) -> None:
    deadline = time.monotonic() + 120
    while not state():
        assert proc.poll() is None, "the process ended"
        assert time.monotonic() < deadline, never
        time.sleep(0.01)


def _thread_syscall(pid: int, tid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()[0])
    except (OSError, ValueError):
        return None


def test_no_python_thread_runs_between_a_reply_and_the_next_command(engine_path, tmp_path):
    # A thread that existed before the solution loaded, as a runtime's worker running a Python callback on a future
    # does, once ran Python between a rank's reply and its next command, off every clock. The engine keeps the GIL
    # while it waits: the thread, woken then, waits for it, and runs only once the command came, in the window.
    cmd_r, cmd_w = os.pipe()
    wake_r, wake_w = os.pipe()
    ran_r, ran_w = os.pipe()
    body = f"""
import threading
def callback():
    os.read({wake_r}, 1)  # blocked here without the GIL, as a worker waiting for its work
    os.write({ran_w}, b"r")
worker = threading.Thread(target=callback, daemon=True)
worker.start()
print(worker.native_id, flush=True)
feed.write([torch.zeros(4)])
def solve(x):
    worker.join()  # the call waits for the callback, as a solution waits for its future: the GIL is let go here
    return x
engine.serve(cmd, report_w, 0, solve, feed.fd, out.fd)
"""
    script_fds = (cmd_r, wake_r, ran_w)
    proc = _one_rank(body, engine_path, tmp_path, cmd_r, extra_fds=script_fds[1:], stdout=subprocess.PIPE)
    for fd in script_fds:
        os.close(fd)
    try:
        assert proc.stdout is not None
        tid = int(proc.stdout.readline())
        read_syscall = _thread_syscall(proc.pid, tid)
        _wait_until(lambda: watch.reading(proc.pid, cmd_r), proc, "the process never waited on its command channel")
        os.write(wake_w, b"w")
        # Woken, the thread leaves its read and asks for the GIL: it ran if it said so, and waits if it is in
        # another system call (the GIL's wait) without having said so.
        ready: list[bytes] = []
        os.set_blocking(ran_r, False)

        def ran_or_waits() -> bool:
            try:
                ready.append(os.read(ran_r, 1))
                return True
            except BlockingIOError:
                now = _thread_syscall(proc.pid, tid)
                return now is not None and now != read_syscall

        _wait_until(ran_or_waits, proc, "the woken thread neither ran nor waited")
        assert ready == [], "a Python thread ran while the engine waited for the host's command"
        os.set_blocking(ran_r, True)
        os.write(cmd_w, timer.command(timer.CALL))
        assert os.read(ran_r, 1) == b"r"  # in the call's window
    finally:
        proc.kill()
        proc.wait()
        for fd in (cmd_w, wake_w, ran_r):
            os.close(fd)
