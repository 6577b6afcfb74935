"""The engine's seal: once a rank is set up, the engine's tables (what it set when opened, its driver table), its
code, its table of library addresses and every loaded object's code are read-only for good (mseal), so a solution
cannot make them writable for a moment to hook a call the engine makes after the solution's return. Memory of the
solution's own keeps every protection it likes. Each case runs in a fresh interpreter: a seal cannot be taken back."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import timer

ROOT = Path(__file__).resolve().parents[3]


def _kernel_seals() -> bool:
    major, minor = (int(v) for v in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 10)


pytestmark = pytest.mark.skipif(not _kernel_seals(), reason="mseal needs Linux 6.10 or later")


@pytest.fixture(scope="module")
def engine_path() -> str:
    return str(timer.build())


def _run(engine_path: str, body: str, tmp_path: Path) -> dict:
    prologue = f"""
import ctypes, json, os, sys
import torch
import torch.distributed as dist
from evaluator import timer
from evaluator.timer.protocol import open_engine
dist.init_process_group("gloo", init_method="file://{tmp_path}/pg", rank=0, world_size=1)
engine = timer.load({engine_path!r})
read_fd, write_fd = os.pipe()
open_engine(engine, write_fd, dist.group.WORLD, torch.device("cpu"))
report_r, report_w = os.pipe()
engine.hold_report_channel(report_w)
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]

def regions(path_end):
    out = []
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) > 5 and parts[5].endswith(path_end):
            start, end = (int(v, 16) for v in parts[0].split("-"))
            out.append((start, end, parts[1]))
    return out

def writable(start):
    ok = libc.mprotect(start & ~0xFFF, 4096, 3) == 0
    return ok, 0 if ok else ctypes.get_errno()
"""
    done = subprocess.run(
        [sys.executable, "-c", prologue + body], capture_output=True, text=True, cwd=ROOT, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_after_the_seal_no_page_of_the_engine_or_of_any_loaded_library_can_be_made_writable(engine_path, tmp_path):
    out = _run(
        engine_path,
        """
engine_file = [r for r in regions("_arena_timer.so")]
libc_code = [r for r in regions("libc.so.6") if "x" in r[2]]
relro = [r for r in engine_file if r[2].startswith("r--")]
before = writable(libc_code[0][0])[0]
libc.mprotect(libc_code[0][0] & ~0xFFF, 4096, 5)  # as it was: the seal must not depend on this test's page
sealed = engine.seal()
python_code = [r for r in regions(os.path.basename(os.path.realpath(sys.executable))) if "x" in r[2]]
print(json.dumps({
    "sealed": sealed,
    "libc_writable_before": before,
    "engine_code": [writable(s) for s, e, p in engine_file if "x" in p],
    "engine_read_only": [writable(s) for s, e, p in relro],
    "libc_code": writable(libc_code[0][0]),
    "python_code": writable(python_code[0][0]),
    "own_page": writable(libc.mmap(None, 4096, 1, 0x22, -1, 0)),
}))
""",
        tmp_path,
    )
    assert out["sealed"] is True
    assert out["libc_writable_before"] is True  # before the seal a library's code could be made writable
    for ok, err in out["engine_code"] + out["engine_read_only"] + [out["libc_code"], out["python_code"]]:
        assert (ok, err) == (False, 1)  # EPERM
    assert out["own_page"] == [True, 0]


def test_the_engines_tables_are_read_only_and_sealed_and_the_seal_is_given_once(engine_path, tmp_path):
    out = _run(
        engine_path,
        """
engine.seal()
flags = {}
current = None
for line in open("/proc/self/smaps"):
    head = line.split()
    if "-" in head[0] and len(head) >= 5:
        current = (head[0], head[1], head[5] if len(head) > 5 else "")
    elif head[0] == "VmFlags:" and current:
        flags[current] = head[1:]
# The engine's own anonymous data after its file: the tables are its read-only, sealed pages.
names = [k for k in flags]
at = max(i for i, k in enumerate(names) if k[2].endswith("_arena_timer.so"))
after = [(k[1], "sl" in flags[k]) for k in names[at + 1 : at + 6] if not k[2]]
try:
    engine.seal()
    again = "sealed twice"
except RuntimeError as exc:
    again = str(exc)
print(json.dumps({"after": after, "again": again}))
""",
        tmp_path,
    )
    assert ["r--p", True] in out["after"], out["after"]
    assert out["again"] == "the engine is already sealed"


def test_the_clocks_data_cannot_be_replaced_after_the_seal(engine_path, tmp_path):
    # The sealed vDSO code reads its time from [vvar]: a private copy remapped over it would be the engine's clock.
    out = _run(
        engine_path,
        """
engine.seal()
vvar = [r for r in open("/proc/self/maps") if r.rstrip().endswith("[vvar]")]
start, end = (int(v, 16) for v in vvar[0].split()[0].split("-"))
copy = libc.mmap(None, end - start, 3, 0x22, -1, 0)
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
moved = libc.mremap(copy, end - start, end - start, 3, start)  # MREMAP_MAYMOVE | MREMAP_FIXED
err = ctypes.get_errno()
over = libc.mmap(start, end - start, 3, 0x32, -1, 0)  # MAP_FIXED over it
err_over = ctypes.get_errno()
print(json.dumps({"moved": moved == start, "err": err, "over": over == start, "err_over": err_over}))
""",
        tmp_path,
    )
    assert out == {"moved": False, "err": 1, "over": False, "err_over": 1}
