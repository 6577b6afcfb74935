"""Solution backends on CPU: how a backend is declared, which files the CPU runs skip, the multicast rule per
hardware profile, what the sandbox binds for ParallelKittens, the runtime helpers' flags and numbers
(docs/backends/)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from evaluator.contract import backends
from evaluator.contract.backends import BackendError, declared_backend, runs_on_cpu
from evaluator.contract.profiles import PROFILES, SMOKE_PROFILES
from evaluator.contract.spec import EvalSpec
from evaluator.host import evaluate as evaluate_module
from evaluator.host import sandbox
from evaluator.host.evaluate import evaluate
from evaluator.rank.backends import nvshmem as nvshmem_numbers
from evaluator.rank.backends import parallelkittens as pk
from problems.backends import nvshmem as problems_nv
from problems.backends import parallelkittens as problems_pk
from evaluator.analysis.static_checks import _MULTICAST, check

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "backends"
PLAIN = "import torch\n\ndef solution(x):\n    return x.clone()\n"


# -- declaring a backend -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source, filename, expected",
    [
        (PLAIN, "solution.py", None),
        ('BACKEND = "parallelkittens"\n' + PLAIN, "solution.py", "parallelkittens"),
        ('BACKEND: str = "nvshmem"\n' + PLAIN, None, "nvshmem"),
        (PLAIN, "12_all_gather_parallelkittens.py", "parallelkittens"),
        (PLAIN, "dir/put_nvshmem.py", "nvshmem"),
        (PLAIN, "ring_symmetric_memory.py", "symmetric-memory"),
        (PLAIN, "copy_triton.py", "triton"),
        (PLAIN, "nvshmem.py", None),  # the suffix needs a name before it
        ('BACKEND = "nvshmem"\n' + PLAIN, "x_nvshmem.py", "nvshmem"),
        ("def f(:\n", "x.py", None),  # does not parse: left to the ranks
    ],
)
def test_a_backend_is_declared_by_the_source_or_the_file_name(source, filename, expected):
    assert declared_backend(source, filename) == expected


@pytest.mark.parametrize(
    "source, filename, words",
    [
        ('BACKEND = "kittens"\n', "x.py", "not a backend"),
        ("BACKEND = NAME\n", "x.py", "string literal"),
        ('BACKEND = "cuda"\nBACKEND = "triton"\n', "x.py", "set twice"),
        ('BACKEND = "nvshmem"\n', "x_parallelkittens.py", "file name declares"),
    ],
)
def test_invalid_declarations_are_errors_and_refused_by_the_static_check(source, filename, words):
    with pytest.raises(BackendError, match=words):
        declared_backend(source, filename)
    report = check(source + PLAIN, filename=filename)
    assert [f.rule for f in report.refusals] == ["backend"]
    assert "docs/backends/" in report.refusals[0].message


def test_gpu_only_backends_do_not_run_on_cpu():
    assert backends.GPU_ONLY == {"parallelkittens", "nvshmem"}
    assert runs_on_cpu(PLAIN, "solution.py") and runs_on_cpu(PLAIN, "x_triton.py")
    assert not runs_on_cpu(PLAIN, "x_parallelkittens.py")
    assert not runs_on_cpu('BACKEND = "nvshmem"\n' + PLAIN, "solution.py")
    assert not runs_on_cpu('BACKEND = "bogus"\n' + PLAIN, "solution.py")  # invalid: never run on CPU either


def test_every_gpu_only_known_answer_declares_its_backend_in_name_and_source():
    files = sorted(REPO.glob("problems/*/*/solutions/*/*.py"))
    gpu = [p for p in files if not runs_on_cpu(p.read_text(), p.name)]
    by_backend = {b: [p for p in gpu if declared_backend(p.read_text(), p.name) == b] for b in backends.GPU_ONLY}
    for backend, paths in by_backend.items():
        correct = {p.parent.parent.parent.name for p in paths if p.parent.name == "correct"}
        assert len(correct) >= 2, f"{backend}: known-correct answers on two problems at least, got {correct}"
        assert any(p.parent.name == "wrong" for p in paths), f"{backend}: no known-wrong answer"
        for p in paths:
            assert backends.backend_of_source(p.read_text()) == backend, p
            assert p.name.endswith(f"_{backend}.py"), p
            assert not check(p.read_text(), filename=p.name).refused, p


# -- multicast per profile -----------------------------------------------------------------------------------------
def test_no_profile_allows_multicast_and_results_say_so():
    assert not any(p.multicast_allowed for p in [*PROFILES.values(), *SMOKE_PROFILES.values()])
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            profile="cpu-gloo-2",
            solution_source="import os\ndef solution(x):\n    os._exit(0)\n",
        )
    )
    assert doc["profile"]["multicast_allowed"] is False


# Assembled, so that no file of the repository spells them out.
MULTICAST_SNIPPETS = [
    'CUDA = "asm volatile(\\"multi' + 'mem.ld_reduce.global.add.bf16x2 %0, [%1];\\" : ...);"',
    'CUDA = "multi' + 'mem<bf16_2>::ld_reduce<reduce_op::ADD>(tmp, ptr);"',
    'CUDA = "using P = pgl<gl<bf16,1,1,-1,-1>, 4>; // ' + "mc" + '_ptr passed in"',
    'CUDA = "kittens::barrier' + "_t<4> bar; kittens::barrier" + '_all(bar, {0}, rank);"',
    'CUDA = "signal' + '_all(bar, {0}, 1);"',
    'CUDA = "detail::vmm::multicast' + '_create_handle(&h, &size, n);"',
    "ptr = handle.multicast" + "_ptr",
]


@pytest.mark.parametrize("snippet", MULTICAST_SNIPPETS)
def test_thunderkittens_and_driver_multicast_is_refused_unless_the_profile_allows_it(snippet):
    source = "import torch\n" + snippet + "\ndef solution(x):\n    return x\n"
    report = check(source)
    assert {f.rule for f in report.refusals} == {"multicast"} and report.refusals[0].line == 2
    assert not check(source, multicast_allowed=True).refused


def test_the_multicast_environment_switches_stay_refused_even_where_multicast_is_allowed():
    source = "import os\nos.environ['NVSHMEM_DISABLE_NVLS'] = '0'\ndef solution(x):\n    return x\n"
    assert [f.rule for f in check(source, multicast_allowed=True).refusals] == ["multicast"]


def test_multicast_free_parallelkittens_source_and_the_helper_pass():
    source = (
        'from evaluator.rank.backends import parallelkittens as pk\nBACKEND = "parallelkittens"\n'
        'CUDA = "using P = pgl<gl<bf16,1,1,-1,-1>, ARENA_WORLD, false>; arena_pk::barrier(pads, r, w, 1);"\n' + PLAIN
    )
    assert not check(source).refused
    assert not check("CUDA = " + repr(pk.DEVICE_BARRIER) + "\n" + PLAIN).refused
    assert [f.rule for f in check("import evaluator.rank.backends.parallelkittens as pk\npk.ENV = 'x'\n").refusals] == [
        "patching"
    ]
    assert [f.rule for f in check("import problems.backends.parallelkittens as pk\npk.ENV = 'x'\n").refusals] == [
        "patching"
    ]
    assert not check("from problems.backends import parallelkittens as pk\n" + PLAIN).refused
    assert pk.load is problems_pk.load and nvshmem_numbers.SIGNAL_SET is problems_nv.SIGNAL_SET  # one definition
    assert [f.rule for f in check("from evaluator.rank import worker\n").refusals] == ["harness-import"]


def test_no_tracked_file_spells_a_multicast_name():
    """Hosts grep for the multicast calls; the check and the tests assemble them (the environment switches' own
    names are allowed: they are how multicast is turned off)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    found = []
    for name in listed.stdout.split("\0"):
        path = REPO / name
        if not name or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [
            f"{name}: {m.group(0)}"
            for m in _MULTICAST.finditer(text)
            if "NVLS" not in m.group(0) and not text[m.end() : m.end() + 1].isspace()
        ]  # a name in prose ("... instructions") is no call
    assert found == []


# -- the evaluator's side ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("filename", ["x_parallelkittens.py", "x_nvshmem.py"])
def test_gpu_only_solutions_are_rejected_on_cpu_profiles_before_anything_starts(filename):
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce", profile="cpu-gloo-2", solution_source=PLAIN, solution_name=filename
        )
    )
    assert doc["verdict"] == "rejected" and "GPU profiles only" in doc["message"]
    assert doc["solution"]["backend"] == filename[2:-3] and doc["logs"] == {}


def test_parallelkittens_needs_the_hosts_checkout(monkeypatch, tmp_path):
    profile = SMOKE_PROFILES["h200-smoke-1"]
    monkeypatch.delenv(backends.THUNDERKITTENS_ENV, raising=False)
    verdict, message = evaluate_module._backend_refusal("parallelkittens", profile)
    assert verdict == "infra_error" and backends.THUNDERKITTENS_ENV in message
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "kittens.cuh").write_text("#pragma once\n")
    monkeypatch.setenv(backends.THUNDERKITTENS_ENV, str(tmp_path))
    assert evaluate_module._backend_refusal("parallelkittens", profile) is None
    assert evaluate_module._backend_refusal("nvshmem", profile) is None
    assert evaluate_module._backend_refusal(None, PROFILES["cpu-gloo-2"]) is None


def test_nvshmem_solutions_get_the_nvshmem_symmetric_memory_backend():
    assert backends.SYMM_MEM_BACKEND == {"nvshmem": "NVSHMEM"}
    spec = EvalSpec(problem_id="collectives/all_reduce", solution_source='BACKEND = "nvshmem"\n' + PLAIN)
    assert evaluate_module._solution_backend(spec) == "nvshmem"
    worker = (REPO / "evaluator" / "rank" / "worker.py").read_text()
    boot = worker[worker.index("def boot") : worker.index("def environment")]
    assert 'set_backend(cfg["symm_mem_backend"])' in boot  # in boot: before the solution is loaded


def test_the_sandbox_binds_thunderkittens_read_only_and_stages_the_helper(monkeypatch, tmp_path):
    kittens = tmp_path / "thunderkittens"
    (kittens / "include").mkdir(parents=True)
    (kittens / "include" / "kittens.cuh").write_text("#pragma once\n")
    monkeypatch.setenv(backends.THUNDERKITTENS_ENV, str(kittens))
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap" if name == "bwrap" else None)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    mounts = sandbox.Mounts(tmp_path / "rt", tmp_path / "t.so", tmp_path / "s", tmp_path / "io", tmp_path / "c")
    env = sandbox.environment({}, "cuda")
    argv = sandbox.command(mounts, ["python"], env, "cuda", 1 << 20)
    triples = list(zip(argv, argv[1:], argv[2:]))
    assert ("--ro-bind", str(kittens), str(kittens)) in triples
    assert not any(a == "--bind" and b == str(kittens) for a, b, _ in triples)
    assert env[backends.THUNDERKITTENS_ENV] == str(kittens)
    staged = sandbox.stage_runtime(tmp_path / "runtime")
    assert (staged / "evaluator" / "rank" / "backends" / "parallelkittens.py").is_file()
    assert (staged / "evaluator" / "rank" / "backends" / "nvshmem.py").is_file()
    assert (staged / "problems" / "backends" / "parallelkittens.py").is_file()  # the definitions they re-export
    assert (staged / "problems" / "backends" / "nvshmem.py").is_file()
    assert (staged / "problems" / "common.py").is_file()  # a copy of a reference keeps its imports
    assert not (staged / "problems" / "registry.py").exists() and not (staged / "problems" / "collectives").exists()
    monkeypatch.delenv(backends.THUNDERKITTENS_ENV)
    assert backends.THUNDERKITTENS_ENV not in sandbox.environment({}, "cuda")
    assert str(kittens) not in sandbox.command(mounts, ["python"], sandbox.environment({}, "cuda"), "cuda", 1 << 20)


# -- the ParallelKittens helper ------------------------------------------------------------------------------------
def test_kittens_flags_name_the_headers_hopper_and_sm90a_only(monkeypatch, tmp_path):
    monkeypatch.delenv(pk.ENV, raising=False)
    with pytest.raises(pk.KittensUnavailable):
        pk.kittens_flags()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "kittens.cuh").write_text("")
    monkeypatch.setenv(pk.ENV, str(tmp_path))
    flags = pk.kittens_flags(4)
    for flag in (
        "-std=c++20",
        "-DKITTENS_HOPPER",
        "--expt-relaxed-constexpr",
        "--expt-extended-lambda",
        f"-I{tmp_path}/include",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-DARENA_WORLD=4",
    ):
        assert flag in flags
    assert sum("arch" in f for f in flags) == 1  # PyTorch then adds no arch of its own
    assert pk.include_paths() == [f"{tmp_path}/include"]


def test_every_backend_has_a_guide():
    for backend in backends.BACKENDS:
        assert (DOCS / f"{backend}.md").is_file(), f"docs/backends/{backend}.md is missing"
    for backend in backends.GPU_ONLY:
        text = (DOCS / f"{backend}.md").read_text()
        assert "## What the evaluator provides" in text and "## Forbidden" in text, backend


def test_the_image_and_the_readme_pin_the_contracts_thunderkittens_commit():
    commit = backends.THUNDERKITTENS_COMMIT
    assert f"ARG THUNDERKITTENS_COMMIT={commit}" in (REPO / "Dockerfile").read_text()
    assert f"checkout {commit}" in (REPO / "README.md").read_text()


# -- the NVSHMEM helper -------------------------------------------------------------------------------------------
def _nvshmem_call_args(source: str) -> list[tuple[str, ast.expr]]:
    """(function, the argument that names a comparison or signal operation) for each NVSHMEM device call."""
    position = {"signal_op": 2, "signal_wait_until": 1, "wait_until": 1, "putmem_signal_block": 5}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in position:
            found.append((node.func.attr, node.args[position[node.func.attr]]))
    return found


def test_nvshmem_known_answers_take_nvshmems_numbers_from_the_helper():
    # torch's docstrings say GE is 3 and SIGNAL_SET 0; NVSHMEM's headers say 5 and 9. A barrier written with the
    # docstrings' numbers never returned on one H200; the answers name the helper's constants instead.
    assert (nvshmem_numbers.CMP_GE, nvshmem_numbers.CMP_LE, nvshmem_numbers.SIGNAL_SET) == (5, 3, 9)
    answers = sorted((REPO / "problems").glob("*/*/solutions/*/*_nvshmem.py"))
    assert len(answers) >= 3
    for path in answers:
        source = path.read_text()
        calls = _nvshmem_call_args(source)
        assert calls, path
        for name, arg in calls:
            assert isinstance(arg, ast.Name), f"{path.name}: {name} takes a literal, not NVSHMEM's named number"
            assert f"{arg.id} = tl.constexpr(nv.{arg.id})" in source, (path.name, arg.id)
        assert "from problems.backends import nvshmem as nv" in source  # the helper's definition (problems/backends)
