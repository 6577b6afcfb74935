"""The exchange folder is the host's: a rank writes the two files the host made for it there (its output slot and its
log) and can create nothing else. A red team's solution, whose rank folder was its own, filled it with empty files
until every inode of the host's /dev/shm was taken, and no process on the host could create a file there any more."""

import json
import os
import stat

import pytest

from evaluator import wire
from evaluator.contract.spec import EvalSpec
from evaluator.host import sandbox
from evaluator.host.evaluate import _prepare_workdir, evaluate

# An honest all-reduce that, in its first call, tries to make a name of every kind in the exchange folder and in its
# rank's folder, and to move the host's log aside; it says in its log what each try met, and returns a wrong output
# where any try got further than a refusal.
PLANTER = """
import json
import os

import torch
import torch.distributed as dist

_tried = {}


def _try(what, make):
    try:
        make()
        _tried[what] = "made"
    except OSError as exc:
        _tried[what] = type(exc).__name__


def _new_file(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))


def _aside_and_back(path):
    os.rename(path, path + ".old")
    os.rename(path + ".old", path)  # the host still reads this log


def solution(x):
    if not _tried:
        io = os.environ.get("ARENA_IO", "/io")
        mine = os.path.join(io, f"r{dist.get_rank()}")
        _try("file in io", lambda: _new_file(os.path.join(io, "planted")))
        _try("file in rank", lambda: _new_file(os.path.join(mine, "planted")))
        _try("folder in rank", lambda: os.mkdir(os.path.join(mine, "d")))
        _try("fifo in rank", lambda: os.mkfifo(os.path.join(mine, "p")))
        _try("link in rank", lambda: os.symlink("/etc/passwd", os.path.join(mine, "l")))
        _try("log moved aside", lambda: _aside_and_back(os.path.join(mine, "log.txt")))
        print("ARENA_EXCHANGE_TRIES " + json.dumps(_tried, sort_keys=True), flush=True)
    out = x.clone()
    dist.all_reduce(out)
    if any(v != "PermissionError" for v in _tried.values()):
        out += 1
    return out
"""


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0 or sandbox.probe("cpu") is not None, reason="needs root and bubblewrap")
def test_a_solution_can_create_nothing_in_the_exchange_folder_and_an_honest_one_still_passes(tmp_path):
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=PLANTER,
            solution_name="planter.py",
            profile="cpu-gloo-2",
            trials=2,
            timing_iterations=4,
            warmup_iterations=1,
        ),
        workdir_parent=str(tmp_path),
    )
    for r in range(2):
        line = next((ln for ln in doc["logs"][f"rank{r}"].splitlines() if ln.startswith("ARENA_EXCHANGE_TRIES ")), None)
        assert line is not None, doc["logs"][f"rank{r}"]
        tried = json.loads(line.removeprefix("ARENA_EXCHANGE_TRIES "))
        assert tried == dict.fromkeys(
            ("file in io", "file in rank", "folder in rank", "fifo in rank", "link in rank", "log moved aside"),
            "PermissionError",
        ), tried
    assert doc["verdict"] == "passed", doc["message"]


def test_the_host_makes_each_ranks_two_files_in_folders_that_stay_its_own(tmp_path):
    workdir = tmp_path / "eval"
    workdir.mkdir()
    old = os.umask(0o077)  # the folders' modes are set apart from the umask: the sandbox's uid must pass through
    try:
        _prepare_workdir(workdir, 3)
    finally:
        os.umask(old)
    io = workdir / "io"
    root = os.geteuid() == 0
    for folder in (io, *(io / f"r{r}" for r in range(3))):
        st = folder.stat()
        assert stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == os.geteuid(), folder
    for r in range(3):
        assert sorted(p.name for p in (io / f"r{r}").iterdir()) == sorted([wire.OUT_SLOT, "log.txt"])
        for name in (wire.OUT_SLOT, "log.txt"):
            st = (io / f"r{r}" / name).lstat()
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644 and st.st_size == 0
            assert st.st_uid == (sandbox.SANDBOX_UID if root else os.geteuid())
            assert st.st_gid == (sandbox.SANDBOX_GID if root else os.getegid())
