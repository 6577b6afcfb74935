"""A proposal's reference runs only inside the sandbox: one that reaches for Django, the database, the portal's secret
or Redis finds none of them, its check fails contained, and the report says what it found."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from evaluator.host.check import check_sandboxed
from problems.registry import PROBLEMS_ROOT

REPO = str(PROBLEMS_ROOT.parent)

HOSTILE = """
import os, socket
found = []
try:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django
    django.setup()
    from django.contrib.auth.models import User
    User.objects.create_superuser("owned", "x@example.org", "pw")
    found.append("django")
except Exception as exc:
    pass
for path in ("REPO/var/db.sqlite3", "REPO/.env", "var/db.sqlite3"):
    try:
        open(path, "rb").read(16)
        found.append("file:" + path)
    except OSError:
        pass
if os.environ.get("SECRET_KEY") or os.environ.get("ARENA_WORKER_KEY") or os.environ.get("DATABASE_URL"):
    found.append("secret")
try:
    socket.create_connection(("127.0.0.1", 6379), timeout=2).close()
    found.append("redis")
except OSError:
    pass
raise RuntimeError("PROBE found=" + ",".join(found) + " uid=" + str(os.getuid()))
"""


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0, reason="needs bubblewrap and root")
@pytest.mark.django_db
def test_a_hostile_reference_fails_contained(django_user_model):
    folder = PROBLEMS_ROOT / "collectives" / "all_reduce"
    files = {
        "problem.toml": (folder / "problem.toml").read_text(),
        "reference.py": (folder / "reference.py").read_text() + HOSTILE.replace("REPO", REPO),
        "README.md": (folder / "README.md").read_text(),
    }
    users = django_user_model.objects.count()
    report = check_sandboxed("collectives", "probe_everything", files, [])
    text = str(report)
    assert report["ok"] is False, text
    assert "PROBE found= uid=65534" in text, text
    assert django_user_model.objects.count() == users


FORGED = """
import json as _json, os as _os
for _path in ("/io/report.json", "/io/out/report.json"):
    try:
        with open(_path, "w") as _f:
            _json.dump({"version": 1, "ok": True, "message": "all good", "problem_id": "collectives/forged",
                        "world_sizes": [2, 4], "reference": [], "known_answers": [], "warnings": []}, _f)
    except OSError:
        pass
_os._exit(0)
"""


def _proposal(reference_tail: str = "", wrong: bool = False) -> dict[str, str]:
    folder = PROBLEMS_ROOT / "collectives" / "all_reduce"
    reference = (folder / "reference.py").read_text()
    if wrong:  # wrong on purpose: the distributed reference doubles its answer
        reference = reference.replace("def solution(", "def _right_solution(", 1) + (
            "\n\ndef solution(*inputs):\n    return _right_solution(*inputs) * 2\n"
        )
    return {
        "problem.toml": (folder / "problem.toml").read_text(),
        "reference.py": reference + reference_tail,
        "README.md": (folder / "README.md").read_text(),
    }


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_a_reference_that_writes_its_own_report_and_exits_fails():
    # Before, the check ran in the same process as the reference and took any /io/report.json with a boolean "ok":
    # this proposal showed as checked, ok, with a message of its choosing.
    report = check_sandboxed("collectives", "forged", _proposal(FORGED, wrong=True), [])
    assert report["ok"] is False, report
    assert report["message"] != "all good" and "nothing came back" in report["message"], report["message"]


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_the_host_compares_what_comes_back_a_wrong_reference_fails_and_the_right_one_is_checked():
    correct = PROBLEMS_ROOT / "collectives" / "all_reduce" / "solutions" / "correct" / "nccl_inplace_copy.py"
    answers = [{"kind": "correct", "filename": "copy.py", "source": correct.read_text()}]
    wrong = check_sandboxed("collectives", "wrong_ref", _proposal(wrong=True), answers)
    assert wrong["ok"] is False and "reference differs from oracle" in wrong["message"], wrong["message"]
    started = time.monotonic()
    right = check_sandboxed("collectives", "right_ref", _proposal(), answers)
    took = time.monotonic() - started
    assert right["ok"] is True, right["message"]
    # The report's time is the whole check's, the sandbox's run included (it once said "0.0 s" for a 22 s check).
    assert 0.5 * took <= right["duration_s"] <= took
    assert [(r["world_size"], r["ok"]) for r in right["reference"]] == [(2, True), (4, True)]
    assert all(a["ok"] and a["passed_oracle"] for a in right["known_answers"]) and len(right["known_answers"]) == 2


RESERVES = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_got = []
for _folder in ("/io/out", "/cache"):
    _fd = os.open(_folder + "/reserved", os.O_WRONLY | os.O_CREAT, 0o600)
    # FALLOC_FL_KEEP_SIZE: the file's size stays 0, so the per-file limit never applies, and no page is written.
    _rc = _libc.fallocate(_fd, 1, 0, 1900 << 20)  # within the per-file limit of 2 GiB
    _got.append(_folder + ("=reserved" if _rc == 0 else "=" + os.strerror(ctypes.get_errno())))
    os.close(_fd)
    _n = 0
    try:
        while _n < 20000:
            open(f"{_folder}/f{_n}", "w").close()
            _n += 1
    except OSError:
        pass
    _got.append(f"{_folder}:{_n}files")
raise RuntimeError("PROBE " + " ".join(_got))
"""


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_a_check_writes_only_into_bounded_file_systems_of_its_own_that_go_with_it():
    # The check's output folder and build cache lay on the host's disk, bounded by the per-file limit alone: one
    # fallocate there reserved gigabytes, and any number of files could follow.
    from evaluator.host.folders import workdir_root

    root = Path(workdir_root() or tempfile.gettempdir())
    before = set(os.listdir(root))
    report = check_sandboxed("collectives", "reserves", _proposal(RESERVES), [])
    text = str(report)
    assert report["ok"] is False and "PROBE" in text, text
    assert "/io/out=No space left on device" in text and "/cache=No space left on device" in text, text
    assert "/io/out:8190files" in text and "/cache:8190files" in text, text
    left = set(os.listdir(root)) - before
    assert not [name for name in left if name.startswith("arena-check-")], left
    with open("/proc/self/mounts") as f:
        assert "arena-check-" not in f.read()


def test_the_data_reader_takes_only_tensors_it_can_account_for():
    import torch

    from evaluator.checks.problem_check import DATA_MAGIC, read_data, write_data

    path = Path(tempfile.mkdtemp()) / "d"
    ranks = [
        (torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor([True, False])),
        (torch.ones(2, dtype=torch.bfloat16),),
    ]
    write_data(path, ranks)
    raw = path.read_bytes()
    back = read_data(raw)
    assert [len(r) for r in back] == [2, 1] and torch.equal(back[0][0], ranks[0][0])
    assert back[1][0].dtype == torch.bfloat16 and torch.equal(back[1][0], ranks[1][0])
    for bad in (raw + b"x", raw[:-1], b"\x80\x04pickle", DATA_MAGIC + (10**9).to_bytes(8, "little")):
        with pytest.raises(ValueError):
            read_data(bad)
    forged = raw.replace(b'"float32"', b'"object!"')
    with pytest.raises(ValueError):
        read_data(forged)
