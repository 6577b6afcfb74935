"""Limits every sandbox holds from its first instruction: the system-call filter (no user or other namespaces, no
mounts, keyring, ptrace...), a process cap of its own (a pids cgroup per sandbox), and the build cache that keeps
nothing but builds. Each test starts real sandboxes."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from evaluator.contract.spec import EvalSpec
from evaluator.host import cgroups, sandbox, seccomp
from evaluator.host.evaluate import evaluate

REPO = Path(__file__).resolve().parents[3]
HONEST = REPO / "problems" / "collectives" / "all_reduce" / "solutions" / "correct" / "nccl_inplace_copy.py"

needs_sandbox = pytest.mark.skipif(sandbox.probe("cpu") is not None, reason=f"no sandbox: {sandbox.probe('cpu')}")


def in_sandbox(script: str, *, device: str = "cpu", timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs ``script`` with the sandbox's Python in a sandbox made as an evaluation's is, as the sandbox's uid."""
    drop = (
        "import os\nos.setgroups([]); os.setgid(int(os.environ['ARENA_SANDBOX_GID'])); "
        "os.setuid(int(os.environ['ARENA_SANDBOX_UID']))\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        os.chmod(t, 0o755)
        for name in ("rt/evaluator", "sol", "io", "cache"):
            (t / name).mkdir(parents=True)
            os.chmod(t / name, 0o777)
        (t / "timer.so").write_bytes(b"")
        mounts = sandbox.Mounts(t / "rt", t / "timer.so", t / "sol", t / "io", t / "cache")
        argv = sandbox.command(
            mounts,
            [sys.executable, "-c", drop + textwrap.dedent(script)],
            sandbox.environment(dict(os.environ), device),
            device,
            64 << 20,
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, preexec_fn=sandbox.limits(device))


# -- the system-call filter --------------------------------------------------------------------------------------


def test_every_number_in_the_filter_is_libseccomps():
    try:
        lib = ctypes.CDLL("libseccomp.so.2")
    except OSError:
        pytest.skip("libseccomp is not installed here")
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    for arch, table in seccomp.SYSCALLS.items():
        for name, nr in table.items():
            assert lib.seccomp_syscall_resolve_name_arch(seccomp.AUDIT_ARCH[arch], name.encode()) == nr, (arch, name)
        # every refused call has its number on each arch, but for the x86-only ones (port I/O, the first signalfd and
        # inotify_init)
        assert set(seccomp.REFUSED) - set(table) <= {"iopl", "ioperm", "uselib", "signalfd", "inotify_init"}
        assert len(seccomp.compiled(arch)) == 8 * len(seccomp.program(arch))


@needs_sandbox
def test_no_namespace_of_any_kind_can_be_made_in_the_sandbox():
    # Before the filter, `unshare -Urm` gave uid 0 in a new user and mount namespace (a forked, single-threaded child
    # could always make one): the kernel surface where local privilege escalations live.
    done = in_sandbox("""
        import ctypes, errno, os, subprocess
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        def err(rc):
            return 'ok' if rc == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
        print('unshare-user', err(libc.unshare(0x10000000)))
        pid = os.fork()
        if pid == 0:
            os._exit(0 if libc.unshare(0x10000000) == 0 else 1)
        print('forked-child-unshare-user', 'ok' if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else 'EPERM')
        print('unshare-net', err(libc.unshare(0x40000000)))
        print('setns', err(libc.setns(os.open('/proc/self/ns/net', os.O_RDONLY), 0)))
        for cmd in (['unshare', '-U', 'true'], ['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs none /tmp && id -u']):
            r = subprocess.run(cmd, capture_output=True, text=True)
            print(cmd[1], r.returncode, r.stderr.strip()[:80].replace(' ', '_'))
        print('clone3', err(libc.syscall(435, None, 0)))
        print('keyctl', err(libc.syscall(250, 0, -3, 0)))          # KEYCTL_GET_KEYRING_ID of the session keyring
        print('ptrace', err(libc.ptrace(0, 0, None, None)))        # PTRACE_TRACEME
        print('bpf', err(libc.syscall(321, 0, None, 0)))
        print('io_uring', err(libc.syscall(425, 1, None)))
        ctx = ctypes.c_ulong(0)
        print('io_setup', err(libc.syscall(206, 8, ctypes.byref(ctx))))  # native AIO: the device writes while held
        import socket
        s = socket.socket()
        one = ctypes.c_int(1)
        print('so_zerocopy', err(libc.setsockopt(s.fileno(), 1, 60, ctypes.byref(one), 4)))  # SOL_SOCKET, SO_ZEROCOPY
        print('so_reuseaddr', err(libc.setsockopt(s.fileno(), 1, 2, ctypes.byref(one), 4)))  # any other option
        r, w = os.pipe()
        page = ctypes.create_string_buffer(4096)
        iov = (ctypes.c_void_p * 2)(ctypes.cast(page, ctypes.c_void_p).value, 4096)
        spliced = libc.vmsplice(w, iov, 1, 0)  # the pages by reference, for the kernel to copy later
        print('vmsplice', err(0 if spliced >= 0 else spliced))
        os.write(w, b'command')
        r2, w2 = os.pipe()
        copied = libc.tee(r, w2, 7, 0)  # a pipe's data copied and left to be read: a peer's command pipe's key
        print('tee', err(0 if copied >= 0 else copied))
        print('userfaultfd', err(libc.syscall(323, 0)))
        mask = ctypes.create_string_buffer(128)  # an empty sigset_t
        made = libc.signalfd(-1, mask, 0)  # glibc's wrapper calls signalfd4; a descriptor when it works
        print('signalfd', err(0 if made >= 0 else made))
        made = libc.inotify_init1(0)  # notifications of a file's changes, as the host writes and copies the slots
        print('inotify', err(0 if made >= 0 else made))
        print('perf_event_open', err(libc.syscall(298, None, 0, -1, -1, 0)))
        # what a solution does need still works: threads, fork, a program through posix_spawn (clone3 -> clone)
        import threading
        box = []
        t = threading.Thread(target=box.append, args=(1,)); t.start(); t.join()
        print('thread', 'ok' if box == [1] else 'no')
        print('spawn', subprocess.run(['sh', '-c', 'echo hi'], capture_output=True, text=True).stdout.strip())
    """)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert seen["unshare-user"] == "EPERM" and seen["forked-child-unshare-user"] == "EPERM"
    assert seen["unshare-net"] == "EPERM" and seen["setns"] == "EPERM"
    assert not seen["-U"].startswith("0 ") and not seen["-Urm"].startswith("0 "), seen
    assert seen["clone3"] == "ENOSYS"  # so that the C library falls back to clone, whose flags the filter reads
    for call in (
        "keyctl",
        "ptrace",
        "bpf",
        "io_uring",
        "io_setup",
        "so_zerocopy",
        "vmsplice",
        "tee",
        "userfaultfd",
        "signalfd",
        "inotify",
    ):
        assert seen[call] == "EPERM", (call, seen[call])
    assert seen["perf_event_open"] == "EPERM" and seen["so_reuseaddr"] == "ok"
    assert seen["thread"] == "ok" and seen["spawn"] == "hi"


@needs_sandbox
def test_an_honest_solution_passes_under_the_filter_and_finds_no_user_namespace():
    source = HONEST.read_text().replace(
        "def solution(",
        textwrap.dedent("""
        import importlib as _il
        _sp = _il.import_module("sub" + "process")  # past the static check, as an attacker would
        _r = _sp.run(["unshare", "-Ur", "id", "-u"], capture_output=True, text=True)
        print("ARENA_USERNS", "open" if _r.returncode == 0 else "refused", flush=True)


        def solution(""").strip("\n")
        + "",
        1,
    )
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=source,
            profile="cpu-gloo-2",
            solution_name="honest.py",
            trials=2,
            timing_iterations=5,
            warmup_iterations=1,
        )
    )
    assert doc["verdict"] == "passed", doc["message"]
    assert "ARENA_USERNS refused" in doc["logs"]["rank0"] and "ARENA_USERNS open" not in str(doc["logs"])


def test_the_filter_refuses_what_it_lists_and_nothing_the_c_library_needs():
    prog = seccomp.program("x86_64")
    first_allow = next(i for i, (code, _, _, k) in enumerate(prog) if code == 0x06 and k == seccomp.RET_ALLOW)
    numbers = {k for code, _, _, k in prog[:first_allow] if code == 0x15}  # the tests of the call's number
    for name in (
        "read",
        "write",
        "openat",
        "mmap",
        "futex",
        "fork",
        "vfork",
        "execve",
        "setuid",
        "setgroups",
        "ioctl",
        "socket",
        "connect",
        "sched_setaffinity",
        "process_vm_readv",
        "memfd_create",
    ):
        nr = {
            "read": 0,
            "write": 1,
            "openat": 257,
            "mmap": 9,
            "futex": 202,
            "fork": 57,
            "vfork": 58,
            "execve": 59,
            "setuid": 105,
            "setgroups": 116,
            "ioctl": 16,
            "socket": 41,
            "connect": 42,
            "sched_setaffinity": 203,
            "process_vm_readv": 310,
            "memfd_create": 319,
        }[name]
        assert nr not in numbers, name
    assert {seccomp.SYSCALLS["x86_64"][n] for n in seccomp.REFUSED} <= numbers


@needs_sandbox
def test_the_sandboxs_first_command_line_names_no_host_folder_and_no_variable():
    # Every process in the sandbox reads /proc/1/cmdline, bubblewrap's own: it named every host folder bound in (the
    # evaluation's, the build cache, the engine's build) and every variable set. The options now reach bubblewrap in
    # a memory file, which no process of the sandbox holds.
    done = in_sandbox(
        """
        import os
        print("CMDLINE", open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode())
        for fd in os.listdir("/proc/self/fd"):
            try:
                print("FD", fd, os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cmdline = next(line for line in done.stdout.splitlines() if line.startswith("CMDLINE")).split()
    # bubblewrap, its options' descriptor, and the sandbox's own command: nothing else.
    assert cmdline[2:3] + cmdline[4:6] == ["--args", "--", sys.executable], cmdline
    assert not any(word.startswith("--") for word in cmdline[6:]), cmdline
    assert "arena-sandbox-options" not in done.stdout, done.stdout


@needs_sandbox
def test_no_process_of_the_sandbox_can_make_itself_dumpable_again():
    # Dumpable, a rank lets another of the sandbox's uid open its /proc/PID/mem, whose writes pass over the read-only,
    # sealed pages of the engine; the other prctl options a library uses still work.
    done = in_sandbox("""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        def err(rc):
            return 'ok' if rc == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
        print('dumpable', err(libc.prctl(4, 1, 0, 0, 0)))
        print('dumpable-high-word', err(libc.prctl(4 | (1 << 32), 1, 0, 0, 0)))
        print('not-dumpable', err(libc.prctl(4, 0, 0, 0, 0)))
        print('is-dumpable', libc.prctl(3, 0, 0, 0, 0))
        print('name', err(libc.prctl(15, b'worker', 0, 0, 0)))
    """)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert seen == {
        "dumpable": "EPERM",
        "dumpable-high-word": "EPERM",
        "not-dumpable": "ok",
        "is-dumpable": "0",
        "name": "ok",
    }


# -- processes ---------------------------------------------------------------------------------------------------

FORK_BOMB = """
import importlib
import time

import torch
import torch.distributed as dist

_mp = importlib.import_module("multi" + "processing").get_context("fork")
_children = []
for _ in range(1000):  # at import: before any phase of the host's own watching
    p = _mp.Process(target=time.sleep, args=(120,), daemon=True)
    p.start()
    _children.append(p)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


def _sandbox_cgroups() -> dict[str, Path]:
    root = cgroups.pids_root()
    return {p.name: p for p in root.iterdir() if p.is_dir()} if root else {}


@needs_sandbox
@pytest.mark.skipif(cgroups.pids_root() is None, reason="no writable pids cgroup on this host")
def test_a_thousand_forks_at_import_stop_at_the_sandboxs_own_cap_and_the_next_evaluation_passes():
    before = _sandbox_cgroups()
    started = time.monotonic()
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=FORK_BOMB,
            profile="cpu-gloo-2",
            solution_name="fork_bomb.py",
            trials=2,
            timing_iterations=5,
            warmup_iterations=1,
        )
    )
    took = time.monotonic() - started
    assert doc["verdict"] in ("compile_error", "runtime_error"), doc["message"]
    assert "Resource temporarily unavailable" in doc["message"] + doc.get("traceback", "")
    assert doc["message"].startswith("the sandbox reached its cap of"), doc["message"]  # the verdict names the limit
    assert took < 90, took  # refused at the cap, not timed out
    made = {name: path for name, path in _sandbox_cgroups().items() if name not in before}
    cap = sandbox.pids_max("cpu")
    reached = [path for path in made.values() if cgroups.refusals(path)]
    assert len(reached) == 1, made  # the solution's sandbox, not the judge's: each has its own cap
    peak = reached[0] / "pids.peak"
    if peak.exists():
        assert int(peak.read_text()) <= cap
    said = sandbox.limits_reached(int(reached[0].name.split("-")[0]))
    assert said and f"cap of {cap} processes" in said[0], said
    # the worker goes on, and so does the next evaluation
    again = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=HONEST.read_text(),
            profile="cpu-gloo-2",
            solution_name="honest.py",
            trials=2,
            measure_timing=False,
        )
    )
    assert again["verdict"] == "passed", again["message"]  # judged correct; its timing is other tests' subject


@pytest.mark.skipif(cgroups.pids_root() is None, reason="no writable pids cgroup on this host")
def test_empty_sandbox_cgroups_are_swept_and_busy_ones_never():
    root = cgroups.pids_root()
    idle, busy = root / "sweep-test-idle", root / "sweep-test-busy"
    for path in (idle, busy):
        path.mkdir(exist_ok=True)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        assert cgroups.sweep(root, older_than_s=3600) == 0 or idle.exists()  # too young: kept
        cgroups.sweep(root, older_than_s=0)
        assert not idle.exists() and busy.exists()  # a cgroup with a process in it cannot be removed
    finally:
        sleeper.kill()
        sleeper.wait()
    deadline = time.monotonic() + 5
    while busy.exists() and time.monotonic() < deadline:
        cgroups.sweep(root, older_than_s=0)
        time.sleep(0.1)
    assert not busy.exists()


# -- the build cache ---------------------------------------------------------------------------------------------

STASH = """
import os

import torch
import torch.distributed as dist

# at import, as a solution that uses its build cache for storage would: two files no build tool makes, and one that
# stands where load_inline puts its library
for _path, _size in (("/cache/stash.bin", 8 << 20), ("/cache/torch_extensions/notes.txt", 1 << 20),
                     ("/cache/torch_extensions/py311_cpu/ext/ext.so", 1000)):
    os.makedirs(os.path.dirname(_path), exist_ok=True)
    with open(_path, "wb") as _f:
        _f.write(bytes(_size))


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


def _tree_bytes(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@needs_sandbox
def test_what_a_solution_leaves_in_its_cache_is_gone_after_the_job_and_the_cache_stays_under_its_cap(
    redis_conn, monkeypatch, tmp_path
):
    # Before, /cache kept whatever a solution wrote, for good, one folder per source: tests could fill a worker's disk.
    import hashlib

    from rq import Queue
    from rq.serializers import JSONSerializer

    from evaluator.contract.jobs import EVALUATE
    from evaluator.host.worker import ArenaSimpleWorker

    root = tmp_path / "cache"
    cap = 6 << 20
    monkeypatch.setenv("ARENA_CACHE_DIR", str(root))
    monkeypatch.setenv("ARENA_CACHE_MAX_BYTES", str(cap))
    for i, age in enumerate((3000, 2000, 1000)):  # three earlier solutions' builds, 2 MiB each, the oldest first
        lib = root / "solutions" / f"old{i}" / "torch_extensions" / "py311_cpu" / "ext" / "ext.so"
        lib.parent.mkdir(parents=True)
        lib.write_bytes(bytes(2 << 20))
        when = time.time() - age
        for p in [lib, *lib.parents][:5]:
            os.utime(p, (when, when))
    spec = EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=STASH,
        profile="cpu-gloo-2",
        trials=2,
        timing_iterations=5,
        warmup_iterations=1,
    )
    queue = Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer)
    job = queue.enqueue(EVALUATE, spec.to_dict(), 1, "nonce", job_timeout=600)
    ArenaSimpleWorker([queue], connection=redis_conn).work(burst=True)
    job.refresh()
    assert job.get_status() == "finished", job.exc_info
    assert job.return_value()["document"]["verdict"] == "passed", job.return_value()["document"]["message"]
    entry = root / "solutions" / hashlib.sha256(STASH.encode()).hexdigest()[:24]
    assert entry.is_dir()
    assert not (entry / "stash.bin").exists() and not (entry / "torch_extensions" / "notes.txt").exists()
    assert (entry / "torch_extensions" / "py311_cpu" / "ext" / "ext.so").is_file()  # named as a build's: kept
    assert _tree_bytes(root / "solutions") <= cap
    assert not (root / "solutions" / "old0").exists() and (root / "solutions" / "old2").exists()  # LRU first


def test_the_cache_upkeep_never_follows_a_link_out_of_the_cache(tmp_path):
    from evaluator.host import build_cache

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.so").write_bytes(b"host file")
    entry = tmp_path / "root" / "solutions" / "e"
    (entry / "triton").mkdir(parents=True)
    os.symlink(outside, entry / "triton" / "dir")  # a folder link where a kernel's folder would be
    os.symlink(outside / "keep.so", entry / "triton" / "k.so")
    os.symlink(outside, entry / "inductor")
    os.mkfifo(entry / "triton" / "pipe.json")
    done = build_cache.maintain(tmp_path / "root", cap=1 << 30)
    assert done["removed_files"] == 4
    assert (outside / "keep.so").read_bytes() == b"host file"
    assert sorted(p.name for p in (entry / "triton").iterdir()) == []


# -- memory ------------------------------------------------------------------------------------------------------

MEMORY_HOG = """
import torch
import torch.distributed as dist

_hoard = torch.ones(3 << 28)  # 3 GiB of float32 at import, every page touched


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


@needs_sandbox
@pytest.mark.skipif(cgroups.memory_root() is None, reason="no writable memory cgroup on this host")
def test_a_solution_past_the_memory_cap_is_stopped_and_the_next_evaluation_passes(monkeypatch):
    # Before, a rank could allocate until the host's OOM killer chose a victim, the worker's own processes included.
    cap = 3 << 29  # 1.5 GiB for each sandbox of this test: the honest run needs well under half of it
    monkeypatch.setenv("ARENA_SANDBOX_MEMORY", str(cap))
    memory = cgroups.memory_root()
    before = {p.name for p in memory.iterdir() if p.is_dir()}
    started = time.monotonic()
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=MEMORY_HOG,
            profile="cpu-gloo-2",
            solution_name="memory_hog.py",
            trials=2,
            timing_iterations=5,
            warmup_iterations=1,
        )
    )
    assert doc["verdict"] in ("runtime_error", "compile_error"), doc["message"]
    assert "SIGKILL" in doc["message"] or "MemoryError" in doc["message"], doc["message"]
    assert time.monotonic() - started < 90
    made = [p for p in memory.iterdir() if p.is_dir() and p.name not in before]
    killed = [p for p in made if cgroups.oom_kills(p)]
    assert len(killed) == 1, made  # the solution's sandbox; the judge's has its own cap and was left alone
    said = sandbox.limits_reached(int(killed[0].name.split("-")[0]))
    assert any("memory cap of 1.5 GiB" in line for line in said), said
    again = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=HONEST.read_text(),
            profile="cpu-gloo-2",
            solution_name="honest.py",
            trials=2,
            measure_timing=False,
        )
    )
    assert again["verdict"] == "passed", again["message"]  # judged correct; its timing is other tests' subject


def _counts_sockets_apart() -> bool:
    memory = cgroups.memory_root()
    return memory is not None and (memory / "memory.kmem.tcp.limit_in_bytes").exists()


@needs_sandbox
@pytest.mark.skipif(not _counts_sockets_apart(), reason="socket buffers are capped apart on cgroup v1 hosts only")
def test_unread_socket_buffers_stop_at_the_sandboxs_own_cap_not_the_hosts_pool(monkeypatch):
    # On cgroup v1 socket buffers were charged to no cgroup: a red team filled the host's one TCP pool (every network
    # namespace's) to its hard limit from a sandbox, with loopback connections nobody read.
    cap = 32 << 20
    monkeypatch.setattr(sandbox, "TCP_MEMORY_MAX", cap)
    done = in_sandbox(
        """
        import socket
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        queued, kept = 0, []
        for _ in range(48):  # 48 connections of up to 4 MiB each, written and never read
            a = socket.create_connection(server.getsockname())
            b, _ = server.accept()
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            a.setblocking(False)
            while True:
                try:
                    queued += a.send(b"x" * 65536)
                except (BlockingIOError, OSError):
                    break
            kept += [a, b]
        print("QUEUED", queued)
        """,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    queued = int(next(line for line in done.stdout.splitlines() if line.startswith("QUEUED")).split()[1])
    # Under a cap of 32 MiB the 48 connections queued 28.6 MiB; without one, 504 MiB.
    assert queued < 2 * cap, f"{queued >> 20} MiB queued past a cap of {cap >> 20} MiB"
