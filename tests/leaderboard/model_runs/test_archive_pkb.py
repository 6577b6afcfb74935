"""Model runs for an imported ParallelKernelBench suite may name attempts as that project names solution files."""

import pytest

from leaderboard.model_runs.container import ArchiveError
from leaderboard.model_runs.layout import read_archive
from leaderboard.model_runs.writer import build_archive

MANIFEST = {
    "model": "m",
    "provider": "p",
    "protocol": "zero-shot",
    "k": 1,
    "turn_budget": 0,
    "tokens": 10,
    "wall_time_s": 1.0,
    "hardware": "cpu-gloo-2",
    "date": "2026-11-29",
    "open_weights": True,
    "suite": "pkb",
}
KNOWN = {
    "pkb/3_all_reduce": {"suite": "pkb", "world_sizes": [2, 4]},
    "pkb/12_all_gather": {"suite": "pkb", "world_sizes": [2, 4]},
}
SOURCE = "def solution(x):\n    return x\n"


def test_pkb_solution_file_names_are_attempts_of_their_problem():
    data = build_archive(
        MANIFEST, {}, extra_files={"attempts/3_all_reduce_cuda.py": SOURCE, "attempts/12_all_gather_triton.py": SOURCE}
    )
    run = read_archive(data, "run.zip", KNOWN)
    assert sorted((a.problem_id, a.index) for a in run.attempts) == [("pkb/12_all_gather", 1), ("pkb/3_all_reduce", 1)]


def test_a_pkb_name_for_no_imported_problem_is_refused():
    data = build_archive(MANIFEST, {}, extra_files={"attempts/99_unknown_cuda.py": SOURCE})
    with pytest.raises(ArchiveError, match="attempts/99_unknown_cuda.py: not where an attempt goes"):
        read_archive(data, "run.zip", KNOWN)
