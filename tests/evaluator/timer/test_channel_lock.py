"""The engine's channel lock: once a rank's channels are in place, no thread or child of the rank may re-point one.
dup2/dup3 onto a locked descriptor, or any further system-call filter, ends the process with SIGSYS (which the host
reads as a refusal); closing one, or setting close-on-exec on it, is refused and the process goes on; every other
descriptor stays the process's own, and a child process still starts. Each case runs in a fresh interpreter: a
filter cannot be taken back."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import timer

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def engine_path() -> str:
    return str(timer.build())


def _run(engine_path: str, body: str) -> subprocess.CompletedProcess:
    prologue = f"""
import ctypes, json, os, subprocess, threading
import torch  # the engine links against its libraries
from evaluator import timer
engine = timer.load({engine_path!r})
read_fd, locked = os.pipe()
spare_r, spare_w = os.pipe()
command, to_command = os.pipe()
os.write(to_command, b"0123456789")
engine.lock_channels([locked], command_fd=command)
libc = ctypes.CDLL(None, use_errno=True)
"""
    return subprocess.run(
        [sys.executable, "-c", prologue + body], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def _result(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_closing_a_locked_channel_is_refused_and_the_channel_still_carries(engine_path):
    done = _run(
        engine_path,
        """
try:
    os.close(locked)
    closed = "closed"
except PermissionError:
    closed = "refused"
ranged = libc.syscall(436, locked, locked, 0)  # close_range over it alone
errno_range = ctypes.get_errno()
wide = libc.syscall(436, 3, 0xFFFFFFFF, 0)  # close_range over everything from 3
errno_wide = ctypes.get_errno()
os.write(locked, b"still here")
print(json.dumps({"close": closed, "range": [ranged, errno_range], "wide": [wide, errno_wide],
                  "read": os.read(read_fd, 100).decode()}))
""",
    )
    assert _result(done) == {"close": "refused", "range": [-1, 1], "wide": [-1, 1], "read": "still here"}


@pytest.mark.parametrize(
    "attack",
    [
        "os.dup2(spare_w, locked)",
        "libc.syscall(292, spare_w, locked, 0)",  # dup3
        # From a thread that holds no GIL in the call: the lock covers every thread, not only the one that set it.
        "t = threading.Thread(target=lambda: libc.dup2(spare_w, locked)); t.start(); t.join()",
        "libc.prctl(22, 2, 0, 0, 0)",  # PR_SET_SECCOMP: a filter of its own
        "libc.syscall(317, 1, 0, 0)",  # seccomp(SECCOMP_SET_MODE_FILTER, ...)
        # The command channel is the engine's to read, from its own read instruction alone.
        "os.read(command, 4)",
        "t = threading.Thread(target=lambda: os.read(command, 4)); t.start(); t.join()",
        "os.readv(command, [bytearray(4)])",
        "libc.syscall(275, command, None, spare_w, None, 4, 0)",  # splice it into a pipe of its own
        "os.dup(command)",
        "import fcntl; fcntl.fcntl(command, fcntl.F_DUPFD, 100)",
        "import fcntl; fcntl.fcntl(command, 1030, 100)",  # F_DUPFD_CLOEXEC
        "os.dup2(command, spare_w)",  # a copy onto a number of the process's own
        "libc.syscall(292, command, spare_w, 0)",  # dup3 likewise
    ],
    ids=[
        "dup2",
        "dup3",
        "dup2_from_a_thread",
        "prctl_seccomp",
        "seccomp",
        "read_command",
        "read_command_from_a_thread",
        "readv_command",
        "splice_command",
        "dup_command",
        "fcntl_dupfd_command",
        "fcntl_dupfd_cloexec_command",
        "dup2_from_command",
        "dup3_from_command",
    ],
)
def test_re_pointing_a_locked_channel_or_adding_a_filter_ends_the_process(engine_path, attack):
    if not sys.platform.startswith("linux") or not _x86_64():
        pytest.skip("the system-call numbers here are x86_64's")
    done = _run(engine_path, attack + "\nprint('survived')\n")
    assert done.returncode == -signal.SIGSYS, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "survived" not in done.stdout


def test_a_locked_channel_stays_open_across_exec_and_close_on_exec_cannot_be_set(engine_path):
    done = _run(
        engine_path,
        """
import fcntl
refused = []
try:
    fcntl.fcntl(locked, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
except PermissionError:
    refused.append("F_SETFD")
try:
    fcntl.ioctl(locked, 0x5451)  # FIOCLEX
except PermissionError:
    refused.append("FIOCLEX")
try:
    fcntl.fcntl(locked, 1031, 4096)  # F_SETPIPE_SZ: a pipe of one page would split the engine's lines
except PermissionError:
    refused.append("F_SETPIPE_SZ")
fcntl.fcntl(spare_w, fcntl.F_SETFD, fcntl.FD_CLOEXEC)  # any other descriptor: the process's own
fcntl.fcntl(spare_w, 1031, 4096)
print(json.dumps({"refused": refused, "flags": fcntl.fcntl(locked, fcntl.F_GETFD)}))
""",
    )
    # os.pipe() makes close-on-exec descriptors: the lock clears the flag on its channels first.
    assert _result(done) == {"refused": ["F_SETFD", "FIOCLEX", "F_SETPIPE_SZ"], "flags": 0}


def test_other_descriptors_stay_the_process_own_and_children_still_start(engine_path):
    done = _run(
        engine_path,
        """
os.write(spare_w, b"x")
assert os.read(spare_r, 1) == b"x"  # reads of other descriptors are the process's own
a, b = os.pipe()
os.dup2(spare_w, b)
os.close(a)
os.close(b)
child = subprocess.run(["/bin/echo", "child"], capture_output=True, text=True, close_fds=True)
print(json.dumps({"child": child.stdout.strip(), "code": child.returncode}))
""",
    )
    assert _result(done) == {"child": "child", "code": 0}


def _x86_64() -> bool:
    import platform

    return platform.machine() in ("x86_64", "AMD64")


def test_the_command_channels_flags_stay_the_engines(engine_path):
    # Non-blocking, the engine would take an empty pipe for the host's hang-up; asynchronous, its signals would go
    # where the solution says. Refused, and the process goes on; another descriptor's flags are its own.
    done = _run(
        engine_path,
        """
import fcntl
refused = []
for name, change in [("F_SETFL", lambda: fcntl.fcntl(command, fcntl.F_SETFL, os.O_NONBLOCK)),
                     ("F_SETOWN", lambda: fcntl.fcntl(command, fcntl.F_SETOWN, os.getpid())),
                     ("FIONBIO", lambda: fcntl.ioctl(command, 0x5421, b"\\x01\\x00\\x00\\x00")),
                     ("FIOASYNC", lambda: fcntl.ioctl(command, 0x5452, b"\\x01\\x00\\x00\\x00"))]:
    try:
        change()
    except PermissionError:
        refused.append(name)
fcntl.fcntl(spare_r, fcntl.F_SETFL, os.O_NONBLOCK)
print(json.dumps({"refused": refused, "blocking": not fcntl.fcntl(command, fcntl.F_GETFL) & os.O_NONBLOCK,
                  "other": bool(fcntl.fcntl(spare_r, fcntl.F_GETFL) & os.O_NONBLOCK)}))
""",
    )
    assert _result(done) == {"refused": ["F_SETFL", "F_SETOWN", "FIONBIO", "FIOASYNC"], "blocking": True, "other": True}
