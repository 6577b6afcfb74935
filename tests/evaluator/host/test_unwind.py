"""Walking a stopped thread's frames by its code's call-frame information (evaluator/host/unwind.py), to the thread's
first frame: through code built without frame pointers (each frame's rule rests on the stack pointer) and with them
(each rests on the frame pointer, a register /proc does not show for the innermost frames)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.host import unwind, watch

pytestmark = pytest.mark.skipif(os.uname().machine != "x86_64", reason="the walk reads x86_64 frames only")

LIBRARY = r"""
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) void wait_here(void) {
  volatile char pad[200];
  pad[0] = 0;
  pause();
  pad[1] = 1;
}
void *thread_main(void *arg) { wait_here(); return arg; }
void *clock_loop(void *arg) {  /* reads the clock without end, as runtime threads that poll it do */
  struct timespec t;
  for (;;) clock_gettime(CLOCK_MONOTONIC, &t);
  return arg;
}
"""


def _thread_of(library: Path, entry: str) -> str:
    """A child's script: one new thread running ``entry`` of ``library``, whose id it prints."""
    return (
        "import ctypes, os, time\n"
        f"lib = ctypes.CDLL({str(library)!r})\n"
        "before = set(os.listdir('/proc/self/task'))\n"
        f"ctypes.CDLL(None).pthread_create(ctypes.byref(ctypes.c_ulong()), None, lib.{entry}, None)\n"
        "while set(os.listdir('/proc/self/task')) == before:\n"
        "    time.sleep(0.01)\n"
        "print((set(os.listdir('/proc/self/task')) - before).pop(), flush=True)\n"
        "time.sleep(60)"
    )


def _stopped_thread(library: Path) -> tuple[subprocess.Popen, int]:
    """A process whose one new thread waits in ``library``'s code, stopped; and that thread's id."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _thread_of(library, "thread_main")], stdout=subprocess.PIPE, text=True
    )
    tid = int(proc.stdout.readline())
    # The thread reaches its wait soon after it exists: until then /proc shows it running, with no stack pointer.
    deadline = time.monotonic() + 10
    while open(f"/proc/{proc.pid}/task/{tid}/syscall").read().startswith("running") and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGSTOP)
    while not watch.stopped(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc, tid


def _library(tmp_path: Path, *flags: str) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "wait.c").write_text(LIBRARY)
    library = tmp_path / "libwait.so"
    subprocess.run([cc, "-O2", *flags, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "wait.c")], check=True)
    return library


def _walk(pid: int, tid: int) -> tuple[unwind.Frames, list[unwind.Mapping], list[str]]:
    """A stopped thread's frames as the host walks them, the process's code and why the walk stopped short."""
    fields = open(f"/proc/{pid}/task/{tid}/syscall").read().split()
    sp, pc = int(fields[-2], 16), int(fields[-1], 16)
    code, end = watch._code_mappings(pid, sp)
    assert end is not None
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        stack = os.pread(fd, end - sp, sp)
    finally:
        os.close(fd)
    why: list[str] = []
    return unwind.live_frames(pid, sp, pc, stack, code, why), code, why


@pytest.mark.parametrize("frame_pointers", [True, False])
def test_a_threads_frames_are_walked_to_its_first_frame(tmp_path, frame_pointers):
    library = _library(tmp_path, "-fno-omit-frame-pointer" if frame_pointers else "-fomit-frame-pointer")
    proc, tid = _stopped_thread(library)
    try:
        frames, code, why = _walk(proc.pid, tid)
        assert frames.complete, why
        sp = int(open(f"/proc/{proc.pid}/task/{tid}/syscall").read().split()[-2], 16)
        ours = [m for m in code if m.path == str(library)]
        # wait_here's return into thread_main, and thread_main's into the C library's thread start.
        assert sum(1 for f in frames.addresses if any(m.start <= f < m.end for m in ours)) >= 1
        assert len(frames.addresses) >= 3
        assert frames.every_word_from > sp  # above the thread's first frame
    finally:
        proc.kill()
        proc.wait()


def test_a_thread_stopped_in_the_kernels_vdso_is_walked_through_it(tmp_path):
    # A thread that reads the clock all the time is stopped inside the vDSO now and then, in no file's code: its
    # frames are read from the vDSO's own call-frame information, in the process's memory.
    library = _library(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", _thread_of(library, "clock_loop")], stdout=subprocess.PIPE, text=True
    )
    try:
        tid = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            os.kill(proc.pid, signal.SIGSTOP)
            while not watch.stopped(proc.pid):
                time.sleep(0.001)
            pc = int(open(f"/proc/{proc.pid}/task/{tid}/syscall").read().split()[-1], 16)
            if any(m.path == unwind.VDSO and m.start <= pc < m.end for m in watch._code_mappings(proc.pid, 0)[0]):
                break
            os.kill(proc.pid, signal.SIGCONT)
        else:
            pytest.fail("the thread was never stopped inside the vDSO")
        frames, code, why = _walk(proc.pid, tid)
        assert frames.complete, why
        assert any(m.path == str(library) and m.start <= f < m.end for f in frames.addresses for m in code)
    finally:
        proc.kill()
        proc.wait()


def test_a_file_that_takes_an_earlier_files_device_and_inode_is_read_anew(tmp_path, monkeypatch):
    # Each evaluation's sandbox has a tmpfs of its own, and device and inode numbers are reused once one is gone: a
    # warm worker kept the tables it read for an earlier evaluation's file and used them for a later one's.
    import mmap

    earlier, later = tmp_path / "earlier.so", tmp_path / "later.so"
    earlier.write_bytes(b"not an object file " * 300)
    shutil.copy(sys.executable, later)
    real_fstat = os.fstat

    def same_numbers(fd: int) -> os.stat_result:
        st = list(real_fstat(fd))
        st[1], st[2] = 4242, 4243  # st_ino, st_dev
        return os.stat_result(st)

    monkeypatch.setattr(unwind.os, "fstat", same_numbers)
    held = []

    def mapped(path: Path) -> unwind.Mapping:
        f = open(path, "rb")
        held.append((f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)))
        for line in Path("/proc/self/maps").read_text().splitlines():
            if line.endswith(str(path)):
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                return unwind.Mapping(start, end, 0, str(path))
        raise AssertionError(f"{path} is not mapped")

    with pytest.raises(unwind._Unwalkable):
        unwind._image(os.getpid(), mapped(earlier))
    assert isinstance(unwind._image(os.getpid(), mapped(later)), unwind._Image)
