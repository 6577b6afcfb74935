"""ParallelKernelBench interoperability (evaluator/suites/pkb/, problems/imported.py), on CPU ranks over gloo, against
the small fake checkout that tests/evaluator/pkb_fake.py writes (see there for its four problems)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.suites.pkb import evaluate as pkb_evaluate, importer, names
from evaluator.suites.installed import evaluate  # where evaluations start, as on a worker: dispatched to the suite
from evaluator.contract.spec import EvalSpec
from problems import registry
from problems.registry import read_paths
from tests.evaluator.pkb_fake import CONSTANT_CHEAT, CORRECT_ALL_REDUCE, REPLICATION_AWARE_MATMUL, head, write_checkout

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fake checkout imported (with the CPU probe) into a suites folder of its own."""
    base = tmp_path_factory.mktemp("pkb")
    checkout = write_checkout(base / "checkout")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARENA_SUITES_DIR", str(base / "suites"))
        registry.clear_caches()
        report = importer.import_checkout(checkout)
        yield report, checkout
    registry.clear_caches()


def run(problem_id: str, source: str, name: str = "solution.py", **kw) -> dict:
    kw.setdefault("measure_timing", False)
    kw.setdefault("trials", 3)
    return evaluate(EvalSpec(problem_id=problem_id, solution_source=source, solution_name=name, **kw))


def test_import_registers_the_problems_with_categories_commit_and_input_decisions(imported):
    report, checkout = imported
    assert report.ok, report.summary()
    assert report.commit == head(checkout)
    problems = {pid: p for pid, p in registry.catalogue().items() if p.suite == "pkb"}
    assert sorted(problems) == [
        "pkb/1_all_reduce",
        "pkb/2_all_gather",
        "pkb/3_matmul_all_reduce",
        "pkb/4_expert_split_by_counts",
    ]
    assert {pid: p.category for pid, p in problems.items()} == {
        "pkb/1_all_reduce": "collectives",
        "pkb/2_all_gather": "collectives",
        "pkb/3_matmul_all_reduce": "tensor-parallel",
        "pkb/4_expert_split_by_counts": "expert-parallel",
    }
    p = registry.get("pkb/1_all_reduce")
    assert p.imported["commit"] == head(checkout) and p.imported["file"] == "reference/1_all_reduce.py"
    assert p.imported["source"] == "ParallelKernelBench" and p.version == 1
    assert p.tolerance("bfloat16").atol == p.tolerance("bfloat16").rtol == 1e-2
    assert "imported" in p.statement.lower() and head(checkout)[:12] in p.statement
    # The project holds none of the checkout's code: the adapter loads it.
    assert "dist.all_reduce" not in p.reference_source
    decisions = {e.problem_id: e.inputs for e in report.problems}
    assert decisions == {
        "pkb/1_all_reduce": "randomized",
        "pkb/2_all_gather": "randomized",
        "pkb/3_matmul_all_reduce": "randomized",
        "pkb/4_expert_split_by_counts": "original",
    }, [e.reason for e in report.problems]
    assert "fails on random inputs" in report.problems[3].reason
    assert "pkb/4_expert_split_by_counts" in report.summary() and "original" in report.summary()


def test_replicated_inputs_stay_replicated_and_constants_become_per_rank(imported):
    import torch

    from problems.imported import ImportedProblem

    folder = registry.get("pkb/3_matmul_all_reduce").path
    mm = ImportedProblem(folder)
    cpu = torch.device("cpu")
    assert mm.modes(2, cpu, torch.float32, (8, 8)) == {"0": "per-rank", "1": "shared"}
    a0 = mm.make_inputs(0, 2, 11, cpu, "float32", "8x8", "randomized")
    a1 = mm.make_inputs(1, 2, 11, cpu, "float32", "8x8", "randomized")
    b0 = mm.make_inputs(0, 2, 12, cpu, "float32", "8x8", "randomized")
    assert torch.equal(a0[1], a1[1]) and not torch.equal(a0[0], a1[0])  # w shared, x per rank
    assert not torch.equal(a0[1], b0[1])  # a new seed, new values
    ar = ImportedProblem(registry.get("pkb/1_all_reduce").path)
    assert ar.modes(2, cpu, torch.float32, (8, 8)) == {"0": "per-rank"}
    x0 = ar.make_inputs(0, 2, 5, cpu, "float32", "8x8", "randomized")[0]
    x1 = ar.make_inputs(1, 2, 5, cpu, "float32", "8x8", "randomized")[0]
    assert not torch.equal(x0, x1) and x0.dtype == torch.float32 and x0.shape == (8, 8)
    assert bool((x0 >= 0.5).all() and (x0 <= 1.5).all())  # around the original constant 1, same sign
    assert torch.equal(ar.make_inputs(0, 2, 5, cpu, "float32", "8x8", "original")[0], torch.ones(8, 8))


def test_correct_solution_with_a_pkb_file_name_passes_on_randomized_inputs(imported):
    doc = run("pkb/1_all_reduce", CORRECT_ALL_REDUCE, name="1_all_reduce_triton.py", measure_timing=True)
    assert doc["verdict"] == "passed", doc["message"]
    assert doc["problem"]["inputs"] == "randomized"
    assert doc["problem"]["imported"]["file"] == "reference/1_all_reduce.py"
    assert doc["timing"]["speedup"] > 0 and doc["roofline"] is None


def test_constant_cheat_on_constant_input_all_reduce_is_caught(imported):
    # On the checkout's own constant inputs the cheat passes: that is the hole randomization closes.
    on_original = run("pkb/1_all_reduce", CONSTANT_CHEAT, params={"inputs": "original"})
    assert on_original["verdict"] == "passed", on_original["message"]
    assert on_original["problem"]["inputs"] == "original (requested)"
    doc = run("pkb/1_all_reduce", CONSTANT_CHEAT)
    assert doc["verdict"] == "wrong_output", doc["message"]
    assert doc["problem"]["inputs"] == "randomized"


def test_a_solution_relying_on_replicated_weights_still_passes(imported):
    doc = run("pkb/3_matmul_all_reduce", REPLICATION_AWARE_MATMUL, name="3_matmul_all_reduce_cuda.py")
    assert doc["verdict"] == "passed", doc["message"]
    assert doc["problem"]["inputs"] == "randomized"


def test_reference_that_fails_on_random_inputs_falls_back_and_says_so(imported):
    source = (imported[1] / "reference" / "4_expert_split_by_counts.py").read_text()
    doc = run("pkb/4_expert_split_by_counts", source)
    assert doc["verdict"] == "passed", doc["message"]
    assert doc["problem"]["inputs"] == "original (reference fails on random inputs)"
    assert "at import" in doc["problem"]["inputs_decision"]


def test_without_import_probe_the_decision_is_made_at_evaluation(tmp_path, monkeypatch):
    checkout = write_checkout(tmp_path / "checkout", git=False)
    monkeypatch.setenv("ARENA_SUITES_DIR", str(tmp_path / "suites"))
    registry.clear_caches()
    try:
        report = importer.import_checkout(checkout, probe=False)
        assert report.ok and report.commit == "unknown"
        assert all(e.inputs == "undecided" for e in report.problems)
        source = (checkout / "reference" / "4_expert_split_by_counts.py").read_text()
        doc = run("pkb/4_expert_split_by_counts", source, trials=2)
        assert doc["verdict"] == "passed", doc["message"]
        assert doc["problem"]["inputs"] == "original (reference fails on random inputs)"
        assert "at evaluation" in doc["problem"]["inputs_decision"] and doc["phases"]["input_probe"] > 0
        # Recorded for the next evaluation on this host (outside the content hash).
        recorded = pkb_evaluate.recorded_decision(registry.get("pkb/4_expert_split_by_counts"), "cpu-gloo-2")
        assert recorded[0] == "original"
        doc = run("pkb/1_all_reduce", CONSTANT_CHEAT, trials=2)
        assert doc["verdict"] == "wrong_output" and doc["problem"]["inputs"] == "randomized"
    finally:
        registry.clear_caches()


@pytest.mark.parametrize(
    "breakage, fragment",
    [
        (
            lambda root: (root / "utils" / "input_output_tensors.py").unlink(),
            "utils/input_output_tensors.py is missing",
        ),
        (
            lambda root: (root / "utils" / "input_output_tensors.py").write_text("def other():\n    pass\n"),
            "defines no create_input_tensor",
        ),
        (lambda root: [p.unlink() for p in (root / "reference").glob("*.py")], "holds no usable"),
        (lambda root: __import__("shutil").rmtree(root / "reference"), "reference is missing"),
    ],
)
def test_malformed_checkout_is_refused_naming_what_is_missing(tmp_path, monkeypatch, breakage, fragment):
    checkout = write_checkout(tmp_path / "checkout", git=False)
    breakage(checkout)
    monkeypatch.setenv("ARENA_SUITES_DIR", str(tmp_path / "suites"))
    report = importer.import_checkout(checkout, probe=False)
    assert not report.ok
    assert fragment in report.summary() and "refused" in report.summary()
    assert not (tmp_path / "suites").exists() or not any((tmp_path / "suites").iterdir())


def test_a_reference_without_solution_is_skipped_and_reported(tmp_path, monkeypatch):
    checkout = write_checkout(tmp_path / "checkout", git=False)
    (checkout / "reference" / "5_broken.py").write_text("def not_solution():\n    pass\n")
    monkeypatch.setenv("ARENA_SUITES_DIR", str(tmp_path / "suites"))
    registry.clear_caches()
    try:
        report = importer.import_checkout(checkout, probe=False)
        assert report.ok and len(report.problems) == 4
        assert "5_broken.py: defines no `solution`" in report.summary()
    finally:
        registry.clear_caches()


def test_edited_checkout_is_an_infra_error_until_reimported_and_the_version_moves(tmp_path, monkeypatch):
    checkout = write_checkout(tmp_path / "checkout", git=False)
    monkeypatch.setenv("ARENA_SUITES_DIR", str(tmp_path / "suites"))
    registry.clear_caches()
    try:
        assert importer.import_checkout(checkout, probe=False).ok
        before = registry.get("pkb/2_all_gather").content_hash
        ref = checkout / "reference" / "2_all_gather.py"
        ref.write_text(ref.read_text() + "\n# edited\n")
        doc = run("pkb/2_all_gather", CORRECT_ALL_REDUCE)
        assert doc["verdict"] == "infra_error" and "import-pkb" in doc["message"]
        registry.clear_caches()
        assert importer.import_checkout(checkout, probe=False).ok
        after = registry.get("pkb/2_all_gather")
        assert after.version == 2 and after.content_hash != before
        assert registry.get("pkb/1_all_reduce").version == 1
    finally:
        registry.clear_caches()


def test_suite_folder_that_is_not_an_import_is_never_overwritten(tmp_path):
    checkout = write_checkout(tmp_path / "checkout", git=False)
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep")
    report = importer.import_checkout(checkout, into=precious, probe=False)
    assert not report.ok and "not a suite written by" in report.summary()
    assert (precious / "notes.txt").read_text() == "keep"
    bad = importer.import_checkout(checkout, into=tmp_path / "collectives", probe=False)
    assert not bad.ok and "taken by the built-in suite" in bad.summary()


def test_load_problems_gives_imported_problems_their_own_rows(imported, db):
    from leaderboard.models import Problem
    from leaderboard.catalogue.services import problems_sync

    report = problems_sync()
    assert "pkb/3_matmul_all_reduce" in report.created
    row = Problem.objects.get(pk="pkb/3_matmul_all_reduce")
    assert row.suite == "pkb" and row.category == "tensor-parallel" and row.is_active
    assert "ParallelKernelBench" in row.codebase and imported[0].commit[:12] in row.codebase
    assert Problem.objects.get(pk="collectives/all_reduce").suite == "arena"


def test_paths_the_ranks_read_for_an_imported_problem(imported):
    report, checkout = imported
    paths = read_paths(registry.get("pkb/1_all_reduce"))
    assert paths == [report.suite_dir, checkout]
    assert read_paths(registry.get("collectives/all_reduce")) == []


def test_solution_file_names(imported):
    ok = names.solution_filename_ok
    assert ok("pkb/2_all_gather", "2_all_gather_cuda.py") is None
    assert ok("pkb/2_all_gather", "2_all_gather_parallelkittens.py") is None
    assert ok("pkb/2_all_gather", "solution.py") is None
    assert "problem 3" in ok("pkb/2_all_gather", "3_matmul_all_reduce_triton.py")
    assert "backend 'cutlass'" in ok("pkb/2_all_gather", "2_all_gather_cutlass.py")
    assert ok("collectives/all_reduce", "2_all_gather_cuda.py") is None
    assert names.problem_for_solution_filename("3_matmul_all_reduce_triton.py") == "pkb/3_matmul_all_reduce"
    assert names.problem_for_solution_filename("solution.py") is None


def test_category_inference():
    assert importer.infer_category("all_to_all") == ("collectives", "all_to_all")
    assert importer.infer_category("all_reduce") == ("collectives", "all_reduce")
    assert importer.infer_category("matmul_reduce_scatter")[0] == "tensor-parallel"
    assert importer.infer_category("moe_all_to_all_dispatch")[0] == "expert-parallel"
    assert importer.infer_category("ring_attention")[0] == "sequence-parallel"
    assert importer.infer_category("fsdp_all_gather")[0] == "data-parallel"
    assert importer.infer_category("vocab_parallel_cross_entropy")[0] == "vocab-parallel"
    assert importer.infer_category("pipeline_send_recv")[0] == "pipeline"
    assert importer.infer_category("distributed_fft")[0] == "non-llm"
    assert importer.infer_category("mystery") == ("non-llm", "default")


def test_arena_import_pkb_and_eval_from_the_command_line(tmp_path):
    checkout = write_checkout(tmp_path / "checkout")
    env = {**os.environ, "ARENA_SUITES_DIR": str(tmp_path / "suites"), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "evaluator.cli", "import-pkb", str(checkout)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Imported 4 ParallelKernelBench problem(s)" in done.stdout and head(checkout)[:12] in done.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "evaluator.cli", "problems"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert "pkb/3_matmul_all_reduce" in listed.stdout
    solution = checkout / "solutions" / "1_all_reduce_triton.py"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "eval",
            "--problem",
            "pkb/1_all_reduce",
            "--solution",
            str(solution),
            "--no-timing",
            "--trials",
            "2",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "passed" and doc["problem"]["inputs"] == "randomized"
    refused = subprocess.run(
        [sys.executable, "-m", "evaluator.cli", "import-pkb", str(tmp_path / "nowhere")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert refused.returncode == 1 and "is not a directory" in refused.stdout
