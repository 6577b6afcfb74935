"""A job's build cache (evaluator/host/job_cache.py): the sandbox's /cache is a file system of the job's own, bounded
in bytes and files, filled from the solution's entry and emptied back into it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evaluator.contract.spec import EvalSpec
from evaluator.host import folders, job_cache, sandbox
from evaluator.host.evaluate import _cache_dir, evaluate

ROOT = Path(__file__).resolve().parents[3]

needs_sandbox = pytest.mark.skipif(sandbox.probe("cpu") is not None, reason=f"no sandbox: {sandbox.probe('cpu')}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a file system needs root")

# At import, in each rank: what /cache holds from an earlier run, how large /cache is, whether a reservation larger
# than it (a red team's, 24 GiB in 21 ms on the host's disk) and a write past it are refused, and a build product left
# for the next run of the same source.
RESERVES_AND_BUILDS = """
import ctypes, errno, os
import torch
import torch.distributed as dist

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_product = f"/cache/torch_extensions/probe/rank{os.environ['RANK']}.so"
print("ARENA_FOUND", os.path.exists(_product), flush=True)
_fs = os.statvfs("/cache")
print("ARENA_SIZE", _fs.f_blocks * _fs.f_frsize, _fs.f_files, flush=True)
_reserved = f"/cache/reserved{os.environ['RANK']}"
_fd = os.open(_reserved, os.O_WRONLY | os.O_CREAT, 0o600)
_got = _libc.fallocate(_fd, 1, 0, 24 << 30)  # FALLOC_FL_KEEP_SIZE
print("ARENA_RESERVE", _got, errno.errorcode.get(ctypes.get_errno(), "-") if _got else "-", flush=True)
os.close(_fd)
os.remove(_reserved)
os.makedirs(os.path.dirname(_product), exist_ok=True)
with open(_product, "wb") as _f:
    _f.write(TAG)

def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


def _spec(tag: bytes) -> EvalSpec:
    return EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=f"TAG = {tag!r}\n" + RESERVES_AND_BUILDS,
        profile="cpu-gloo-2",
        trials=1,
        timing_iterations=3,
        warmup_iterations=1,
    )


def _said(doc: dict, key: str) -> list[list[str]]:
    logs = "\n".join((doc.get("logs") or {}).values())
    return [line.split(key + " ", 1)[1].split() for line in logs.splitlines() if key + " " in line]


@needs_sandbox
@needs_root
def test_the_build_cache_bounds_what_a_job_reserves_and_keeps_its_builds_for_the_next_run():
    tag = hashlib.sha256(os.urandom(8)).hexdigest().encode()
    spec = _spec(tag)
    entry = _cache_dir(spec.solution_source)
    first = evaluate(spec)
    assert first["verdict"] == "passed", first["message"]
    assert _said(first, "ARENA_FOUND") == [["False"]] * 2
    sizes = _said(first, "ARENA_SIZE")
    assert sizes and all(int(b) <= job_cache.JOB_CACHE_BYTES and int(f) <= job_cache.JOB_CACHE_FILES for b, f in sizes)
    # Refused by the file system's size, or by the file-size limit before it (a tmpfs checks that limit first).
    assert [got for got, _ in _said(first, "ARENA_RESERVE")] == ["-1", "-1"]
    assert {why for _, why in _said(first, "ARENA_RESERVE")} <= {"ENOSPC", "EFBIG"}
    # What the job built is in the solution's entry, and nothing of the job's stays mounted.
    assert [(entry / "torch_extensions" / "probe" / f"rank{r}.so").read_bytes() for r in (0, 1)] == [tag, tag]
    # The entry is the host's: no process of the sandbox's uid on the host can plant a build in it.
    assert entry.stat().st_mode & 0o077 == 0
    for path in (entry, entry / "torch_extensions" / "probe", entry / "torch_extensions" / "probe" / "rank0.so"):
        assert path.stat().st_uid == 0, path
    ours = folders.job_folder_prefix("eval")
    assert not [line for line in Path("/proc/self/mounts").read_text().splitlines() if ours in line]
    second = evaluate(spec)
    assert second["verdict"] == "passed", second["message"]
    assert _said(second, "ARENA_FOUND") == [["True"]] * 2


@needs_root
def test_a_job_waits_for_another_holding_its_solutions_entry(tmp_path):
    # A prebuild and the evaluation of the same solution hold the entry's lock for their whole job: the evaluation
    # starts once the build is done and finds what it built.
    entry = tmp_path / "solutions" / "abc"
    entry.mkdir(parents=True)
    order: list[str] = []
    held = threading.Event()

    def build() -> None:
        with job_cache.locked(entry, 60.0) as got:
            held.set()
            order.append(f"second, locked: {got}")

    with job_cache.locked(entry, 60.0) as got:
        worker = threading.Thread(target=build)
        worker.start()
        assert not held.wait(0.2), "the lock let a second job in"
        order.append(f"first, locked: {got}")
    worker.join()
    assert order == ["first, locked: True", "second, locked: True"]


@needs_root
def test_a_job_waits_for_another_only_as_long_as_it_is_told(tmp_path):
    # A build that sleeps at its import must not hold a GPU host's next job past that job's own set-up limit.
    entry = tmp_path / "solutions" / "abc"
    entry.mkdir(parents=True)
    with job_cache.locked(entry, 60.0):
        with job_cache.locked(entry, 0.1) as got:
            assert got is False


@needs_root
def test_a_copy_takes_files_and_folders_and_leaves_links_and_fifos_out(tmp_path):
    source, target = tmp_path / "job", tmp_path / "entry"
    (source / "triton" / "k").mkdir(parents=True)
    (source / "triton" / "k" / "kernel.cubin").write_bytes(b"\x01" * 100)
    (source / "link.so").symlink_to("/etc/hostname")
    os.mkfifo(source / "pipe.so")
    target.mkdir()
    assert job_cache.copy(source, target, os.getuid(), os.getgid()) == 100
    assert sorted(p.name for p in target.rglob("*")) == ["k", "kernel.cubin", "triton"]


@needs_root
def test_what_an_ended_worker_left_is_unmounted_and_removed_and_a_live_ones_is_not(tmp_path):
    # A worker killed in the middle of a job leaves its folder, with the job's build cache mounted in memory.
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = tmp_path / f"arena-eval-{ended.pid}-abc"
    live = tmp_path / f"{folders.job_folder_prefix('eval')}def"
    for folder in (left, live):
        folder.mkdir()
        job_cache.make(folder / "cache", os.getuid(), os.getgid())
        (folder / "cache" / "kept.so").write_bytes(b"x")
    try:
        assert folders.reap_abandoned(tmp_path) == 1
        mounted = Path("/proc/self/mounts").read_text()
        assert not left.exists() and str(left) not in mounted
        assert (live / "cache" / "kept.so").read_bytes() == b"x" and str(live / "cache") in mounted
    finally:
        job_cache.remove(live / "cache")
        job_cache.remove(left / "cache")


@needs_root
def test_a_copy_leaves_out_sparse_files_deep_trees_and_what_no_build_tool_makes(tmp_path):
    # A ninth red team's sparse files (2 GiB of size, one page each) would have been written out whole to the host's
    # disk, and 1,200 nested folders raised out of the evaluation with its file system still mounted (the walk is no
    # longer a recursion, and stops at MAX_DEPTH).
    source, target = tmp_path / "job", tmp_path / "entry"
    made = source / "torch_extensions" / "ext"
    made.mkdir(parents=True)
    (made / "ext.so").write_bytes(b"\x7fELF" + b"\x00" * 4092)
    with open(made / "sparse.so", "wb") as f:
        f.truncate(1 << 30)
        f.write(b"x")
    (made / "notes.txt").write_text("not a build product")
    deep = source / "triton"
    for k in range(2 * job_cache.MAX_DEPTH):
        deep = deep / f"d{k}"
    deep.mkdir(parents=True)
    (deep / "k.cubin").write_bytes(b"k")
    target.mkdir()
    assert job_cache.copy(source, target, os.getuid(), os.getgid()) == 4096
    assert sorted(p.name for p in (target / "torch_extensions" / "ext").iterdir()) == ["ext.so"]
    assert not list(target.rglob("k.cubin"))


@needs_root
def test_a_copy_leaves_out_files_reserved_and_never_written_and_stops_at_its_file_count(tmp_path):
    # A tenth red team's 1.9 GiB reserved with posix_fallocate (a tmpfs counts its pages as allocated) was written out
    # whole at every run; its 65,500 empty files took 29 s to copy back.
    source, target = tmp_path / "job", tmp_path / "entry"
    made = source / "triton" / "many"
    made.mkdir(parents=True)
    with open(source / "triton" / "reserved.so", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 64 << 20)
    for k in range(job_cache.MAX_FILES + 10):
        (made / f"{k}.json").write_bytes(b"")
    target.mkdir()
    job_cache.copy(source, target, os.getuid(), os.getgid())
    assert not (target / "triton" / "reserved.so").exists()
    # The files and the two folders made for them.
    assert len(list((target / "triton" / "many").iterdir())) == job_cache.MAX_FILES - 2


def test_a_copy_counts_the_folders_it_makes_and_leaves_out_files_of_many_names(tmp_path):
    # An eleventh red team's 4,000 chains of 15 folders, one file at the end of each, left 56,000 folders (235 MB) in
    # the entry; 8,192 hard links to one 256 KiB file became 2 GiB there.
    source, target = tmp_path / "job", tmp_path / "entry"
    linked = source / "triton" / "linked"
    linked.mkdir(parents=True)
    (linked / "k.so").write_bytes(b"x" * 4096)
    for k in range(20):
        os.link(linked / "k.so", linked / f"k{k}.so")
    for chain in range(job_cache.MAX_FILES // 4):
        deep = source.joinpath("triton", f"c{chain}", *"abcdefghij")
        deep.mkdir(parents=True)
        (deep / "k.json").write_bytes(b"1")
    target.mkdir()
    job_cache.copy(source, target, os.getuid(), os.getgid())
    made = sum(len(folders) + len(files) for _, folders, files in os.walk(target))
    assert made <= job_cache.MAX_FILES + job_cache.MAX_DEPTH
    assert not (target / "triton" / "linked").exists() or not any((target / "triton" / "linked").iterdir())


def test_a_copy_holds_few_descriptors_however_many_folders_and_logs_a_bounded_number_of_names(tmp_path):
    # A thirteenth red team's 20,000 folders were each opened as the walk found them and held until walked: the host's
    # process ran out of descriptors (everything else it opened then failed too), and each name left out was logged,
    # 20,017 lines a job. Walked under a limit of 128 descriptors, a copy of 3,000 folders still finds the build
    # product at the end, and logs a bounded number of lines for 500 names it leaves out.
    source, target = tmp_path / "job", tmp_path / "entry"
    wide = source / "triton" / "wide"
    for k in range(3000):
        (wide / f"d{k:04d}").mkdir(parents=True)
    (wide / "d2999" / "k.cubin").write_bytes(b"k")
    for k in range(500):
        (wide / f"note{k}.txt").write_bytes(b"")
    target.mkdir()
    script = f"""
import logging, os, resource, sys
from pathlib import Path
from evaluator.host import job_cache
resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
lines = []
handler = logging.Handler()
handler.emit = lambda record: lines.append(record.getMessage())
logging.getLogger("arena.job_cache").addHandler(handler)
copied = job_cache.copy(Path({str(source)!r}), Path({str(target)!r}), os.getuid(), os.getgid())
print(copied, len(lines), sum("Too many open files" in line for line in lines))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300, check=True
    )
    copied, lines, exhausted = (int(v) for v in done.stdout.split())
    assert exhausted == 0 and copied == 1
    assert (target / "triton" / "wide" / "d2999" / "k.cubin").read_bytes() == b"k"
    assert lines <= job_cache.LOGGED_NAMES + 1  # the first names one by one, then a count
