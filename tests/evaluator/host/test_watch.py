"""The host's view of a sandbox's processes (evaluator/host/watch.py): walking down from bubblewrap's process finds
every process in the sandbox, orphans included, as reading every process of the host would."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluator.host import unwind, watch


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
    box = subprocess.Popen(
        [
            "bwrap",
            "--unshare-pid",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "bash",
            "-c",
            "(setsid sleep 33 &) ; sleep 30",
        ]
    )
    try:
        found = _wait_for(box.pid, {"sleep 33"})
        assert [p.cmdline for p in found] == ["sleep 33"]
    finally:
        box.kill()
        box.wait()


def _shell_proc(env: dict[str, str]) -> tuple[subprocess.Popen, watch.Proc]:
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 30; :"], env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        maps = open(f"/proc/{shell.pid}/maps").read()
        if "libc" in maps:  # loaded, its preloads with it
            break
        time.sleep(0.02)
    return shell, watch.Proc(shell.pid, os.getpid(), os.readlink(f"/proc/{shell.pid}/exe"), "/bin/sh -c sleep 30; :")


def test_the_hosts_shell_is_a_build_tool_until_it_runs_code_the_host_did_not_install(tmp_path):
    # The genuine /bin/sh, run from where the host installed it, counts as a build tool; the same program with a
    # library preloaded from a folder a solution can write is a helper running the solution's native code.
    library = next(
        p
        for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6")
        if os.path.exists(p)
    )
    shutil.copy(library, tmp_path / "libarena_preload.so")
    plain, plain_proc = _shell_proc({"PATH": os.environ["PATH"]})
    preloaded, preloaded_proc = _shell_proc(
        {"PATH": os.environ["PATH"], "LD_PRELOAD": str(tmp_path / "libarena_preload.so")}
    )
    try:
        assert watch.is_toolchain(plain_proc)
        assert not watch.is_toolchain(preloaded_proc)
        assert "libarena_preload.so" in (watch.foreign_code(preloaded.pid, watch.program_roots()) or "")
    finally:
        for shell in (plain, preloaded):
            for proc in watch.descendants(shell.pid):
                os.kill(proc.pid, 9)
            shell.kill()
            shell.wait()


def test_a_process_is_stopped_once_every_thread_is_and_runs_again_when_continued():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time\n"
            "threading.Thread(target=lambda: time.sleep(60), daemon=True).start()\ntime.sleep(60)",
        ]
    )
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{proc.pid}/task")) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not watch.stopped(proc.pid) and len(watch.running_threads(proc.pid)) == 2
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not watch.stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watch.stopped(proc.pid) and watch.running_threads(proc.pid) == []
        os.kill(proc.pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while watch.stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not watch.stopped(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert watch.stopped(proc.pid)  # gone: runs nothing


def test_a_signal_handler_installed_after_a_snapshot_is_named_from_outside_the_process():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
            "signal.signal(signal.SIGWINCH, signal.SIG_IGN)\n"
            "print('installed', flush=True); time.sleep(60)",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        before = watch.signal_dispositions(proc.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "installed"
        now = watch.signal_dispositions(proc.pid)
        assert before is not None and now is not None
        assert watch.changed_signals(before, now) == ["SIGUSR1", "SIGWINCH"]
        assert watch.changed_signals(before, before) == []
    finally:
        proc.kill()
        proc.wait()
    assert watch.signal_dispositions(proc.pid) is None  # gone


def test_a_thread_is_judged_by_the_code_on_its_stack_not_by_its_name():
    # A Python thread renamed like gloo's, stopped: its stack holds the interpreter. The main thread too. A process
    # running only the host's libraries in a thread of its own is what the runtime's threads look like.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, threading, time\n"
            "renamed = threading.Event()\n"
            "def named():\n"
            "    ctypes.CDLL(None).prctl(15, b'gloo_fake', 0, 0, 0)\n"
            "    renamed.set()\n"
            "    time.sleep(60)\n"
            "threading.Thread(target=named, daemon=True).start()\n"
            "renamed.wait()\n"
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not watch.stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        names = {tid: name for tid, name in watch.threads(proc.pid).items()}
        fake = next(tid for tid, name in names.items() if name == "gloo_fake")
        assert watch.what_runs(proc.pid, fake) == "Python code"
        main = {(t, start) for t, start in watch.thread_ids(proc.pid) if t == proc.pid}
        assert watch.new_solution_threads(proc.pid, main) == [
            (fake, "gloo_fake, named like a library's thread, with Python code on its stack")
        ]
    finally:
        proc.kill()
        proc.wait()


def _syscall_of(pid: int, tid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()[0]
    except (OSError, IndexError):
        return ""


def _in_the_interpreter(pid: int, tid: int) -> bool:
    """Whether a stopped thread's walked frames reach the interpreter's code."""
    fields = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()
    if len(fields) < 3:
        return False
    sp, pc = int(fields[-2], 16), int(fields[-1], 16)
    code, end = watch._code_mappings(pid, sp)
    assert end is not None
    frames = unwind.live_frames(pid, sp, pc, watch._memory(pid, sp, end - sp), code)
    python = os.path.realpath(f"/proc/{pid}/exe")
    return any(
        c.start <= a < c.end and (c.path == python or os.path.basename(c.path).startswith("libpython"))
        for a in frames.addresses
        for c in code
    )


def test_a_runtime_thread_waiting_for_the_gil_is_the_runtimes_and_a_python_thread_waiting_for_it_is_not(tmp_path):
    # The engine keeps the GIL from a call's return to the next window, so a runtime's thread that must enter Python
    # (a Python callback on a future, torch freeing a tensor's Python object in gloo's worker) waits for it at a
    # stop: it has run no Python, and runs it in the next window. A Python thread waiting for the GIL has the
    # interpreter's evaluation further out, and is still Python code. The all-reduce's second rank joins only once the
    # first holds the GIL, so its future completes in gloo's worker, never in the thread that attached the callback.
    store = f"file://{tmp_path}/store"
    first = f"""
import ctypes, threading, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="{store}", rank=0, world_size=2)
def spin():
    while True:
        pass
spinner = threading.Thread(target=spin, daemon=True)
spinner.start()
held = ctypes.PyDLL(None)  # its calls keep the GIL
work = dist.all_reduce(torch.ones(4), async_op=True)
work.get_future().then(lambda f: f.value())
print(spinner.native_id, flush=True)
held.pause()
"""
    second = f"""
import sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="{store}", rank=1, world_size=2)
sys.stdin.readline()
dist.all_reduce(torch.ones(4))
time.sleep(600)
"""
    with _child(first) as proc, _child(second, stdin=subprocess.PIPE) as peer:
        assert proc.stdout is not None and peer.stdin is not None
        spinner = int(proc.stdout.readline())
        deadline = time.monotonic() + 60
        while _syscall_of(proc.pid, proc.pid) != "34":  # pause(), the GIL held
            assert proc.poll() is None and time.monotonic() < deadline, "the first rank never paused"
            time.sleep(0.01)
        peer.stdin.write("go\n")
        peer.stdin.flush()
        while True:
            _stopped(proc)
            waiting = [t for t, name in watch.threads(proc.pid).items() if name.startswith("pt_gloo")]
            waiting = [t for t in waiting if _in_the_interpreter(proc.pid, t)]
            if waiting:
                break
            assert proc.poll() is None and time.monotonic() < deadline, "gloo's worker never asked for the GIL"
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.01)
        assert [watch.what_runs(proc.pid, t) for t in waiting] == [watch.RUNTIME_CODE]
        assert watch.what_runs(proc.pid, spinner) == "Python code"


_X86_64 = pytest.mark.skipif(os.uname().machine != "x86_64", reason="the thread's code is x86_64")


@contextlib.contextmanager
def _child(script: str, **kw: Any) -> Iterator[subprocess.Popen]:
    """A Python child running ``script``, its output read as text; killed on the way out."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, **kw)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# For a child's script: new_thread() starts a native thread at ``start`` and returns its id once it waits in a system
# call (until then /proc shows it running, with no stack pointer to read).
_NEW_THREAD = (
    "import ctypes, os, time\n"
    "libc = ctypes.CDLL(None)\n"
    "def new_thread(start, arg=None):\n"
    "    before = set(os.listdir('/proc/self/task'))\n"
    "    libc.pthread_create(ctypes.byref(ctypes.c_ulong()), None, start, arg)\n"
    "    while set(os.listdir('/proc/self/task')) == before:\n"
    "        time.sleep(0.01)\n"
    "    tid = int((set(os.listdir('/proc/self/task')) - before).pop())\n"
    "    while open(f'/proc/self/task/{tid}/syscall').read().startswith('running'):\n"
    "        time.sleep(0.01)\n"
    "    return tid\n"
)


def _stopped(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not watch.stopped(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _words_in_python(pid: int, tid: int) -> int:
    """How many words of a stopped thread's live stack fall in the interpreter's code, read as the host once did:
    every word from the stack pointer up."""
    with open(f"/proc/{pid}/task/{tid}/syscall") as f:
        fields = f.read().split()
    if len(fields) < 3:
        return 0  # running: no stack pointer to read
    sp = int(fields[-2], 16)
    code, end = watch._code_mappings(pid, sp)
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        data = os.pread(fd, end - sp, sp)
    finally:
        os.close(fd)
    python = [
        m
        for m in code
        if os.path.basename(m.path).startswith("libpython") or m.path == os.path.realpath(sys.executable)
    ]
    words = (int.from_bytes(data[k : k + 8], "little") for k in range(0, len(data) - 7, 8))
    return sum(1 for w in words if any(m.start <= w < m.end for m in python))


def test_a_library_thread_on_a_stack_an_ended_python_thread_used_is_the_runtimes():
    # glibc gives a new thread the cached stack of one that ended, unwiped: a C library thread started after Python
    # threads have run and ended (gloo's, under load, once refused an honest rank) holds the interpreter's return
    # addresses in slots its frames never wrote. What it runs is read from its frames, not from those slots. Here the
    # C library's scanf, whose frame is large, waits on an empty pipe in a thread of its own.
    with _child(
        _NEW_THREAD + "import threading\n"
        "def deep(n):\n"
        "    return 0 if n == 0 else sum(map(deep, [n - 1]))\n"
        "for _ in range(8):\n"
        "    t = threading.Thread(target=deep, args=(30,)); t.start(); t.join()\n"
        "fmt = ctypes.c_char_p(b'%d')\n"
        "print(new_thread(libc.scanf, fmt), flush=True)\n"
        "time.sleep(60)",
        stdin=subprocess.PIPE,
    ) as proc:
        library = int(proc.stdout.readline())
        _stopped(proc)
        assert _words_in_python(proc.pid, library), "no ended thread's frames were left to mislead"
        assert watch.what_runs(proc.pid, library) == watch.RUNTIME_CODE
        others = {(t, start) for t, start in watch.thread_ids(proc.pid) if t != library}
        assert watch.new_solution_threads(proc.pid, others) == []


@_X86_64
def test_a_thread_that_moved_its_stack_pointer_out_of_its_memory_is_refused_whatever_it_is_called():
    # Code of the thread's own points its stack pointer at nothing and waits in a system call: no stack to read.
    # Judged by its name alone, one named like gloo's would pass.
    with _child(
        _NEW_THREAD + "import mmap\n"
        "code = bytes.fromhex('48c7c410000000' 'b822000000' '0f05' 'ebfe')  # rsp = 16; pause(); loop\n"
        "page = mmap.mmap(-1, 4096, prot=7)\n"
        "page.write(code)\n"
        "tid = new_thread(ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(page))))\n"
        "open(f'/proc/self/task/{tid}/comm', 'w').write('gloo_loop')\n"
        "print(tid, flush=True)\n"
        "time.sleep(60)",
    ) as proc:
        tid = int(proc.stdout.readline())
        _stopped(proc)
        others = {(t, start) for t, start in watch.thread_ids(proc.pid) if t != tid}
        assert watch.new_solution_threads(proc.pid, others) == [
            (tid, "gloo_loop, named like a library's thread, a stack pointer outside its memory")
        ]


@_X86_64
def test_a_thread_that_forges_the_end_of_its_frames_is_judged_by_what_lies_above_it():
    # The walk ends at a frame whose return address the call-frame information marks undefined: the C library's
    # thread start. Code of the thread's own can push a return address into it, so that the walk ends there, above
    # the wait it jumps to, and below what it is (here, an address of its own code): every word above counts.
    with _child(
        _NEW_THREAD + "import mmap, struct\n"
        "from evaluator.host import unwind, watch\n"
        "pause = ctypes.cast(libc.pause, ctypes.c_void_p).value\n"
        "honest = new_thread(ctypes.c_void_p(pause))\n"
        "sp, pc = (int(v, 16) for v in open(f'/proc/self/task/{honest}/syscall').read().split()[-2:])\n"
        "code, end = watch._code_mappings(os.getpid(), sp)\n"
        "with open('/proc/self/mem', 'rb') as mem:\n"
        "    mem.seek(sp)\n"
        "    stack = mem.read(end - sp)\n"
        "end_of_frames = unwind.live_frames(os.getpid(), sp, pc, stack, code).addresses[-1]\n"
        "page = mmap.mmap(-1, 4096, prot=7)\n"
        "at = ctypes.addressof(ctypes.c_char.from_buffer(page))\n"
        "mov = lambda v: b'\\x48\\xb8' + struct.pack('<Q', v)\n"
        "body = mov(at + 64) + b'\\x50' + mov(end_of_frames) + b'\\x50' + mov(pause) + b'\\xff\\xe0'\n"
        "page.write(body)\n"
        "forged = new_thread(ctypes.c_void_p(at))\n"
        "open(f'/proc/self/task/{forged}/comm', 'w').write('gloo_forged')\n"
        "print(honest, forged, flush=True)\n"
        "time.sleep(60)",
        cwd=Path(__file__).resolve().parents[3],
    ) as proc:
        honest, forged = (int(t) for t in proc.stdout.readline().split())
        _stopped(proc)
        assert watch.what_runs(proc.pid, honest) == watch.RUNTIME_CODE
        assert (watch.what_runs(proc.pid, forged) or "").startswith("code from ")


@_X86_64
def test_a_thread_parked_in_a_signal_handler_on_a_stack_of_its_own_is_refused_for_the_handler():
    # The handler (the C library's pause) runs on an alternate signal stack: nothing of the interpreter there. The
    # kernel's record of where the thread was (its Python frames) lies in memory the thread can write, so it is not
    # read: an eleventh red team pointed it at zeros, and at deep mappings read past every budget at every stop.
    with _child(
        "import ctypes, mmap, threading, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "SIGUSR1, SA_ONSTACK = 10, 0x08000000\n"
        "class Action(ctypes.Structure):\n"
        "    _fields_ = [('handler', ctypes.c_void_p), ('mask', ctypes.c_uint64 * 16), ('flags', ctypes.c_int),\n"
        "                ('restorer', ctypes.c_void_p)]\n"
        "class AltStack(ctypes.Structure):\n"
        "    _fields_ = [('sp', ctypes.c_void_p), ('flags', ctypes.c_int), ('size', ctypes.c_size_t)]\n"
        "pause = ctypes.cast(libc.pause, ctypes.c_void_p).value\n"
        "assert libc.sigaction(SIGUSR1, ctypes.byref(Action(pause, flags=SA_ONSTACK)), None) == 0\n"
        "area = mmap.mmap(-1, 1 << 16)\n"
        "parked = threading.Event()\n"
        "def park():\n"
        "    ctypes.CDLL(None).prctl(15, b'gloo_sig', 0, 0, 0)\n"
        "    where = ctypes.addressof(ctypes.c_char.from_buffer(area))\n"
        "    assert libc.sigaltstack(ctypes.byref(AltStack(where, 0, 1 << 16)), None) == 0\n"
        "    parked.set()\n"
        "    libc.pthread_self.restype = ctypes.c_ulong\n"
        "    libc.pthread_kill(ctypes.c_ulong(libc.pthread_self()), SIGUSR1)\n"
        "threading.Thread(target=park, daemon=True).start()\n"
        "parked.wait()\n"
        "print(ctypes.addressof(ctypes.c_char.from_buffer(area)), flush=True)\n"
        "time.sleep(60)",
    ) as proc:
        area = int(proc.stdout.readline())
        (tid,) = [t for t, name in watch.threads(proc.pid).items() if name == "gloo_sig"]

        def on_its_own_stack() -> bool:  # the handler waits in pause(), on the alternate stack
            fields = open(f"/proc/{proc.pid}/task/{tid}/syscall").read().split()
            return len(fields) >= 3 and area <= int(fields[-2], 16) < area + (1 << 16)

        deadline = time.monotonic() + 10
        while not on_its_own_stack() and time.monotonic() < deadline:
            time.sleep(0.01)
        _stopped(proc)
        assert on_its_own_stack()
        assert (watch.what_runs(proc.pid, tid) or "").startswith("a signal's handler frame")


def test_a_thread_whose_live_stack_is_deeper_than_the_host_reads_is_refused():
    # A 10 MiB argument passed by value to a C function pushes the interpreter's frames beyond the 8 MiB read.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, threading, time\n"
            "class Big(ctypes.Structure):\n"
            "    _fields_ = [('a', ctypes.c_char * (10 << 20))]\n"
            "libc = ctypes.CDLL(None)\n"
            "libc.sleep.argtypes = [ctypes.c_uint, Big]\n"
            "threading.stack_size(64 << 20)\n"
            "def deep():\n"
            "    ctypes.CDLL(None).prctl(15, b'gloo_deep', 0, 0, 0)\n"
            "    libc.sleep(60, Big())\n"
            "threading.Thread(target=deep, daemon=True).start()\n"
            "time.sleep(1); print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not watch.stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        deep = next(tid for tid, name in watch.threads(proc.pid).items() if name == "gloo_deep")
        assert "deeper than the host reads" in (watch.what_runs(proc.pid, deep) or "")
    finally:
        proc.kill()
        proc.wait()


def _feed_files(tmp_path: Path) -> tuple[tuple[int, int], tuple[int, int], Path]:
    """A rank's own feed and a peer's, as files: the own one's (device, inode), the peer's, and the peer's path."""
    feed, peer = tmp_path / "feed", tmp_path / "peer_feed"
    for f in (feed, peer):
        f.write_bytes(b"\0" * 8192)
    own, theirs = os.stat(feed), os.stat(peer)
    return (own.st_dev, own.st_ino), (theirs.st_dev, theirs.st_ino), peer


def test_a_private_mapping_of_the_feed_or_a_peers_feed_is_named_and_a_shared_mapping_of_its_own_is_not(tmp_path):
    own, theirs, peer = _feed_files(tmp_path)
    feed = tmp_path / "feed"
    script = (
        "import mmap, os, sys, time\n"
        "f = open(sys.argv[1], 'r+b')\n"
        "m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE if sys.argv[2] == 'private' else mmap.MAP_SHARED)\n"
        "held = open(sys.argv[3], 'rb') if sys.argv[3] != '-' else None\n"
        "if len(sys.argv) > 4:  # the peer's feed mapped shared, its descriptor closed\n"
        "    theirs = mmap.mmap(held.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)\n"
        "    held.close()\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    found = {}
    for name, how, *other in (
        ("shared", "shared", "-"),
        ("private", "private", str(peer)),
        ("peer", "shared", str(peer)),
        ("peer_mapped", "shared", str(peer), "mapped"),
    ):
        proc = subprocess.Popen([sys.executable, "-c", script, str(feed), how, *other], stdout=subprocess.PIPE)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
            found[name] = watch.feed_misuse(proc.pid, own, {theirs: 1})
        finally:
            proc.kill()
            proc.wait()
    assert found["shared"] is None
    assert found["private"] == "a private mapping of its feed slot"
    assert found["peer"] == "a descriptor of rank 1's feed slot"
    assert found["peer_mapped"] == "a mapping of rank 1's feed slot"


def test_a_peers_feed_held_in_a_threads_own_table_of_descriptors_is_named(tmp_path):
    # /proc/PID/fd shows the first thread's table alone: a thread that unshared its table (or was made without
    # CLONE_FILES) held a descriptor there out of the host's sight.
    own, theirs, peer = _feed_files(tmp_path)
    script = (
        "import ctypes, os, sys, threading, time\n"
        "def hold():\n"
        "    assert ctypes.CDLL(None).unshare(0x400) == 0  # CLONE_FILES\n"
        "    fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "    print(fd, flush=True)\n"
        "    time.sleep(60)\n"
        "threading.Thread(target=hold, daemon=True).start()\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(peer)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        fd = int(proc.stdout.readline())
        assert str(fd) not in os.listdir(f"/proc/{proc.pid}/fd")
        found = watch.feed_misuse(proc.pid, own, {theirs: 1})
        assert found == "a descriptor of rank 1's feed slot"
        assert len(watch.descriptor_tables(proc.pid)) == 2
    finally:
        proc.kill()
        proc.wait()


def test_compilers_are_known_by_the_names_images_give_them_and_interpreters_are_not():
    # One GPU image's gcc is /opt/gcc/bin/gcc, a wrapper that runs gcc-real, and its /usr/bin/gcc is
    # x86_64-linux-gnu-gcc-13: an honest Triton launcher built in the first call was refused as a stray process.
    from evaluator.host.sandbox import is_toolchain_name

    for name in ("gcc", "gcc-real", "x86_64-linux-gnu-gcc-13", "g++-13", "c++", "cc1plus", "collect2", "clang-17"):
        assert is_toolchain_name(name), name
    for name in ("python3", "python3.12", "node", "perl", "gcc-evil.sh", "my-gcc-miner"):
        assert not is_toolchain_name(name), name


def test_the_linker_and_assembler_are_known_by_the_files_their_links_end_at_and_the_loader_is_not():
    # /usr/bin/ld -> x86_64-linux-gnu-ld -> x86_64-linux-gnu-ld.bfd, and /proc/PID/exe names the last: the link
    # of an honest Triton launcher, built in the first trial, was refused as a stray process on one GPU image.
    from evaluator.host.sandbox import is_toolchain_name

    for name in ("x86_64-linux-gnu-ld.bfd", "x86_64-linux-gnu-ld.gold", "x86_64-linux-gnu-as", "ld.lld", "as"):
        assert is_toolchain_name(name), name
    for name in ("ld.so", "ld-linux-x86-64.so.2", "ldd", "x86_64-linux-gnu-objdump", "evil-sh", "asm-runner"):
        assert not is_toolchain_name(name), name
    for link in ("/usr/bin/ld", "/usr/bin/as"):
        if os.path.exists(link):
            assert is_toolchain_name(os.path.basename(os.path.realpath(link))), os.path.realpath(link)


def _held(pid: int) -> dict[tuple[int, int], tuple[int, int]]:
    """Stops ``pid`` and waits until every thread is off its CPU, as the host's stop does."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if watch.stopped(pid):
            held = watch.held_threads([pid])
            if held is not None:
                return held
        time.sleep(0.001)
    raise AssertionError("the process did not stop")


@contextlib.contextmanager
def _two_threads(code: str) -> Iterator[int]:
    """A Python process running ``code``, once it has its second thread."""
    proc = subprocess.Popen([sys.executable, "-c", "import threading, time\n" + code])
    try:
        while len(os.listdir(f"/proc/{proc.pid}/task")) < 2:
            time.sleep(0.01)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_stop_is_proved_when_it_ends_a_continued_process_shows_the_time_it_ran():
    # A busy process with two threads: held, nothing of it runs; continued and stopped again (as a timer's SIGCONT
    # would, with nothing of the host's involved), the CPU it used in between shows.
    with _two_threads("threading.Thread(target=lambda: any(iter(int, 1)), daemon=True).start()\nwhile 1: pass") as pid:
        held = _held(pid)
        assert len(held) == 2
        time.sleep(0.05)
        assert watch.ran_while_held(held, [pid]) is None
        os.kill(pid, signal.SIGCONT)
        # Read while it runs (a thread on its CPU has not been charged its time yet: it shows as put on a CPU again)
        # and once it is stopped again (its time shows).
        ran = watch.ran_while_held(held, [pid])
        assert ran is not None and ("ms of CPU" in ran or "put on a CPU again" in ran), ran
        time.sleep(0.02)
        os.kill(pid, signal.SIGSTOP)
        while not watch.stopped(pid):
            time.sleep(0.001)
        ran = watch.ran_while_held(held, [pid])
        assert ran is not None and "ms of CPU" in ran, ran


def test_a_thread_that_appeared_or_ended_while_held_means_the_process_ran():
    with _two_threads("threading.Thread(target=time.sleep, args=(1.0,)).start()\ntime.sleep(60)") as pid:
        held = _held(pid)
        os.kill(pid, signal.SIGCONT)
        while len(os.listdir(f"/proc/{pid}/task")) > 1:  # the sleeper ends once continued
            time.sleep(0.01)
        os.kill(pid, signal.SIGSTOP)
        ran = watch.ran_while_held(held, [pid])
        assert ran is not None and ("ended" in ran or "ms of CPU" in ran), ran
        assert watch.ran_while_held({**held, (pid, 2**22 + 7): (0, 0)}, [pid]) is not None


_HIDDEN_LEADER = """
import ctypes, platform, threading, time
threading.Thread(target=time.sleep, args=(60,)).start()
time.sleep(0.2)
ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)  # exit: this thread alone
"""


def test_a_process_whose_first_thread_ended_alone_is_still_a_process_that_runs():
    # Its first thread gone by the exit system call (not exit_group), the process shows no program and no command
    # line, as one that has just exited does, while its other threads run on: a red team's helper hid so through a
    # whole timing phase, copying its rank's inputs for the peer.
    parent = subprocess.Popen(["bash", "-c", f"{sys.executable} -c '{_HIDDEN_LEADER}' & wait"])
    try:
        deadline = time.monotonic() + 10
        hidden: list[watch.Proc] = []
        while time.monotonic() < deadline and not hidden:
            hidden = [p for p in watch.descendants(parent.pid) if not p.exe and not p.cmdline]
            time.sleep(0.05)
        assert hidden, "the helper's first thread did not end alone"
        _, strange = watch.classify(parent.pid, 1, sys.executable)
        assert hidden[0].pid in {p.pid for p in strange}
    finally:
        for proc in watch.descendants(parent.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        parent.kill()
        parent.wait()


def test_a_thread_is_known_by_its_id_and_its_start_not_its_id_alone():
    # Ids are reused once the host's wrap: a thread of the solution's made under the id of a runtime thread that ended
    # would otherwise be taken for that thread.
    with _child("import time\nprint('ready', flush=True)\ntime.sleep(60)") as proc:
        proc.stdout.readline()
        _stopped(proc)
        (tid, start), *_ = sorted(watch.thread_ids(proc.pid))
        assert watch.new_solution_threads(proc.pid, {(tid, start)}) == []
        assert [t for t, _ in watch.new_solution_threads(proc.pid, {(tid, start - 1)})] == [tid]


def test_more_threads_kept_past_the_load_than_the_runtime_keeps_are_refused_whatever_they_run():
    # Threads parked in the C library's pause() are judged the runtime's by what they run, and each costs the host
    # file reads at every stop: a red team kept 480 across calls, and every iteration took 751 ms of the host's checks.
    # Up to MAX_KEPT_THREADS pass; one more and all are named, the first saying why.
    limit = watch.MAX_KEPT_THREADS
    with _child(
        _NEW_THREAD + f"pause = ctypes.c_void_p(ctypes.cast(libc.pause, ctypes.c_void_p).value)\n"
        f"print(' '.join(str(new_thread(pause)) for _ in range({limit + 1})), flush=True)\n"
        "time.sleep(60)",
    ) as proc:
        made = [int(t) for t in proc.stdout.readline().split()]
        _stopped(proc)
        before = {(t, start) for t, start in watch.thread_ids(proc.pid) if t not in made}
        assert watch.new_solution_threads(proc.pid, before | {next(iter(watch.thread_ids(proc.pid) - before))}) == []
        found = watch.new_solution_threads(proc.pid, before)
        assert sorted(t for t, _ in found) == sorted(made)
        assert f"one of {limit + 1} threads started since the load where at most {limit} may stay" in found[0][1]


def test_a_thread_found_the_runtimes_is_walked_again_only_once_its_process_maps_new_code(monkeypatch):
    # A stop reads every kept thread; its walk is spared while the thread, its stack and the process's code are as
    # they were, and done again once anything it reads may have changed (here: an executable page mapped).
    walks: list[int] = []
    live_frames = unwind.live_frames

    def counted(*args: Any, **kw: Any) -> Any:
        walks.append(1)
        return live_frames(*args, **kw)

    monkeypatch.setattr(unwind, "live_frames", counted)
    with _child(
        _NEW_THREAD + "import mmap, sys\n"
        "print(new_thread(ctypes.c_void_p(ctypes.cast(libc.pause, ctypes.c_void_p).value)), flush=True)\n"
        "sys.stdin.readline()\n"
        "page = mmap.mmap(-1, 4096, prot=7)\n"
        "print('mapped', flush=True)\n"
        "time.sleep(60)",
        stdin=subprocess.PIPE,
    ) as proc:
        parked = int(proc.stdout.readline())
        _stopped(proc)
        verdicts: dict[tuple[object, ...], str] = {}
        assert [watch.what_runs(proc.pid, parked, None, verdicts) for _ in range(3)] == [watch.RUNTIME_CODE] * 3
        assert len(walks) == 1
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.stdin is not None
        proc.stdin.write("map\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "mapped"
        _stopped(proc)
        assert watch.what_runs(proc.pid, parked, None, verdicts) == watch.RUNTIME_CODE
        assert len(walks) == 2


def test_kept_threads_whose_stacks_pass_what_the_host_reads_of_a_rank_are_refused():
    # A ninth red team set libc threads' stacks at the bottom of large mappings and changed them at every call: every
    # stop read, hashed and scanned megabytes a thread. Each stack here is under the per-thread read, all together
    # past the rank's.
    each = watch.STACK_READ - (16 << 10)
    count = watch.KEPT_STACK_BYTES // each + 1
    with _child(
        _NEW_THREAD + "import mmap\n"
        "libc.pthread_attr_setstack.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]\n"
        "pause = ctypes.cast(libc.pause, ctypes.c_void_p)\n"
        "made, keep = [], []\n"
        f"for _ in range({count}):\n"
        f"    region = mmap.mmap(-1, {each})\n"
        "    keep.append(region)\n"
        "    attr = ctypes.create_string_buffer(64)\n"
        "    libc.pthread_attr_init(attr)\n"
        "    libc.pthread_attr_setstack(attr, ctypes.addressof(ctypes.c_char.from_buffer(region)), 64 << 10)\n"
        "    before = set(os.listdir('/proc/self/task'))\n"
        "    libc.pthread_create(ctypes.byref(ctypes.c_ulong()), attr, pause, None)\n"
        "    while set(os.listdir('/proc/self/task')) == before:\n"
        "        time.sleep(0.01)\n"
        "    made.append(int((set(os.listdir('/proc/self/task')) - before).pop()))\n"
        "time.sleep(0.2)\n"
        "print(' '.join(map(str, made)), flush=True)\n"
        "time.sleep(60)",
    ) as proc:
        made = [int(t) for t in proc.stdout.readline().split()]
        _stopped(proc)
        before = {(t, start) for t, start in watch.thread_ids(proc.pid) if t not in made}
        found = watch.new_solution_threads(proc.pid, before)
        assert [label for _, label in found if "the host reads of a rank's kept threads" in label], found
