"""What a solution can read about the host from inside its sandbox. Every rank can read /proc/self/mountinfo, which
gives each bind's source folder relative to its file system; the host rewrites host paths in logs as text, but a
solution can print them encoded. So the sources themselves must say nothing: every folder the sandbox sees under a
name of its own (/arena, /solution, /io, /cache, the engine) comes from the host's cache root or the evaluations'
folder. The host's accounts, hostname, kernel command line and boot id are files of ours, install records that name
where a package came from read empty, and the host's rewriting answers no guess about folders the sandbox does not
show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluator import timer as compiled_timer
from evaluator.contract.spec import EvalSpec
from evaluator.host import neutral_files, sandbox
from evaluator.host.evaluate import evaluate

needs_sandbox = pytest.mark.skipif(sandbox.probe("cpu") is not None, reason=f"no sandbox: {sandbox.probe('cpu')}")


# Prints, hex-encoded (the host's rewriting of host paths in logs does not read hex), the mount table's lines for the
# sandbox's own names.
PRINT_MOUNTS_HEX = """
import torch
import torch.distributed as dist

with open("/proc/self/mountinfo") as _f:
    for _line in _f:
        _fields = _line.split()
        if _fields[4].startswith(("/arena", "/solution", "/io", "/cache")):
            print("ARENA_MOUNT_HEX", (_fields[3] + " " + _fields[4]).encode().hex(), flush=True)
for _guess in GUESSES:
    print("ARENA_GUESS", _guess, flush=True)
for _path in READS:
    with open(_path, "rb") as _f:
        print("ARENA_READ_HEX", _path.encode().hex(), _f.read().hex() or "-", flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


def as_its_file_system_names_it(path: Path) -> str:
    """``path`` relative to the root of its file system, as mountinfo gives a bind's source (/dev/shm/x is /x)."""
    path = path.resolve()
    top = path
    while top.parent != top and os.stat(top.parent).st_dev == os.stat(path).st_dev:
        top = top.parent
    return "/" + str(path.relative_to(top)) if path != top else "/"


def test_the_engine_is_built_under_the_hosts_cache_root_not_a_home(monkeypatch, tmp_path):
    monkeypatch.delenv("ARENA_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = compiled_timer.build_folder()
    assert folder.is_relative_to(compiled_timer.cache_dir()), folder
    assert not folder.is_relative_to(tmp_path), folder


def test_the_sandbox_never_binds_the_users_own_site_packages(monkeypatch, tmp_path):
    import site

    user_site = tmp_path / "home" / ".local" / "lib" / "site-packages"
    user_site.mkdir(parents=True)
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user_site))
    assert not any(p.startswith(str(tmp_path)) for p in sandbox.interpreter_paths())


@needs_sandbox
def test_every_folder_the_sandbox_names_its_own_way_comes_from_the_cache_root_or_the_evaluations_folder(
    monkeypatch, tmp_path
):
    monkeypatch.delenv("ARENA_CACHE_DIR", raising=False)
    parent = tmp_path / "evaluations"
    parent.mkdir()
    # Folders of the host the sandbox does not bind, named as a guess would name them: the host must not rewrite them
    # (a rewrite answers the guess), nor the sandbox's own names.
    guesses = [str(sandbox.PACKAGE_ROOT), str(sandbox.PROBLEMS_ROOT), str(sandbox.PACKAGE_ROOT.parent), "/evaluator"]
    guesses += ["/arena/evaluator/rank/worker.py", str(parent)]
    # The host's accounts, hostname, kernel command line and boot id, and the interpreter's records of where its
    # packages came from (this checkout's editable install, where there is one).
    ours = neutral_files.contents((sandbox.SANDBOX_UID, sandbox.SANDBOX_GID), (sandbox.JUDGE_UID, sandbox.JUDGE_GID))
    records = list(neutral_files.install_records(neutral_files.site_dirs()))
    reads = [*ours, *records]
    spec = EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=f"GUESSES = {guesses!r}\nREADS = {reads!r}\n" + PRINT_MOUNTS_HEX,
        profile="cpu-gloo-2",
        trials=1,
        timing_iterations=3,
        warmup_iterations=1,
    )
    doc = evaluate(spec, workdir_parent=str(parent))
    assert doc["verdict"] == "passed", doc["message"]
    logs = "\n".join((doc.get("logs") or {}).values())
    mounts = [
        bytes.fromhex(line.split("ARENA_MOUNT_HEX ", 1)[1].split()[0]).decode().split(" ")
        for line in logs.splitlines()
        if "ARENA_MOUNT_HEX " in line
    ]
    seen = {point for _, point in mounts}
    assert {"/solution", "/io", "/cache", sandbox.ENGINE_IN_SANDBOX} <= seen, mounts
    published = [as_its_file_system_names_it(p) for p in (compiled_timer.cache_dir(), parent)]
    # /cache is a file system of the evaluation's own (evaluator/host/job_cache.py): its root names nothing of the host.
    elsewhere = [
        (source, point)
        for source, point in mounts
        if not (point == "/cache" and source == "/")
        and not any(source == root or source.startswith(root.rstrip("/") + "/") for root in published)
    ]
    assert not elsewhere, f"bound from host folders a solution should not learn: {elsewhere}"
    read = {
        bytes.fromhex(path).decode(): b"" if data == "-" else bytes.fromhex(data)
        for path, data in (
            line.split("ARENA_READ_HEX ", 1)[1].split()[:2] for line in logs.splitlines() if "ARENA_READ_HEX " in line
        )
    }
    assert {path: read.get(path, b"?").decode() for path in ours} == ours
    assert {path: read.get(path, b"?") for path in records} == {path: b"" for path in records}
    answered = [g for g in guesses if f"ARENA_GUESS {g}\n" not in logs + "\n"]
    assert not answered, f"the host rewrote guesses of folders the sandbox does not show: {answered}"


def test_variables_naming_folders_the_sandbox_does_not_bind_do_not_reach_it(tmp_path):
    # A worker's LD_LIBRARY_PATH or CUDA_PATH in a home reached the sandbox as it was: the folders found nothing
    # inside, and the values named the host's layout.
    home = tmp_path / "home" / "someone"
    env = sandbox.environment(
        {
            "LD_LIBRARY_PATH": f"{home}/.local/lib:/usr/lib",
            "CUDA_PATH": f"{home}/cuda-12.4",
            "VIRTUAL_ENV": f"{home}/venv",
            "CC": "gcc",
            "CXX": f"{home}/bin/g++",
            "PATH": f"{home}/bin:/usr/bin",
        },
        "cpu",
    )
    assert env["LD_LIBRARY_PATH"] == "/usr/lib"
    assert env["PATH"] == "/usr/bin"
    assert env["CC"] == "gcc"  # a name, no folder
    assert "CUDA_PATH" not in env and "VIRTUAL_ENV" not in env and "CXX" not in env
    assert str(tmp_path) not in repr(env)


SPAWNS = """
import importlib
import sys

import torch
import torch.distributed as dist

_started = False


def _linger() -> None:
    import time

    time.sleep(60)


def solution(x: torch.Tensor) -> torch.Tensor:
    global _started
    if not _started:
        _started = True
        mp = importlib.import_module("multi" + "processing")
        child = mp.get_context("fork").Process(target=_linger, daemon=True)
        child.start()
        print("ARENA_CHILD", child.pid, flush=True)
    out = x.clone()
    dist.all_reduce(out)
    return out
"""


@needs_sandbox
def test_a_stray_process_is_named_by_the_pid_the_sandbox_gave_it_not_the_hosts(tmp_path):
    # The host's pids count every process the host started (other evaluations' too): a solution that starts a child
    # and reads its id from the verdict learned the host's counter.
    spec = EvalSpec(
        problem_id="collectives/all_reduce",
        solution_source=SPAWNS,
        profile="cpu-gloo-2",
        trials=2,
        timing_iterations=3,
        warmup_iterations=1,
    )
    doc = evaluate(spec, workdir_parent=str(tmp_path))
    assert doc["verdict"] == "rejected" and "a process other than the ranks" in doc["message"], doc["message"]
    logs = "\n".join((doc.get("logs") or {}).values())
    children = {line.split()[1] for line in logs.splitlines() if line.startswith("ARENA_CHILD ")}
    named = doc["message"].split("pid ", 1)[1].split()[0]
    assert named in children, (named, children)


def test_the_judges_own_failure_names_the_folders_it_reads_by_their_last_part(tmp_path):
    # An imported suite's folder and checkout are bound into the judge at their host paths: a reference that failed
    # put them, and so the checkout's place on the host, into the verdict's traceback.
    from types import SimpleNamespace

    from evaluator.host.session import Session

    suite, checkout = tmp_path / "work" / "arena" / "var" / "suites" / "pkb", tmp_path / "home" / "ParallelKernelBench"
    judge = SimpleNamespace(judge_reads=(suite, checkout))
    text = f'File "{checkout}/problems/7.py", line 3\nFile "{suite}/pkb_7/reference.py", line 9'
    shown = Session.judge_text(judge, text)  # type: ignore[arg-type]
    assert str(tmp_path) not in shown
    assert '"<ParallelKernelBench>/problems/7.py"' in shown and '"<pkb>/pkb_7/reference.py"' in shown


def test_a_compiler_in_a_home_binds_its_bin_folder_not_the_home(monkeypatch, tmp_path):
    # A worker with its C compiler in ~/bin bound the whole home into every sandbox, ~/.ssh included (and one with
    # ninja in ~/.local/bin, the user's own packages): its prefix counted as a toolchain's, bound whole.
    home = tmp_path / "home" / "alice"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("key\n")
    _tool(home / "bin" / "cc-wrap")
    _tool(home / ".local" / "bin" / "ninja")
    (home / ".local" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    monkeypatch.setenv("CC", str(home / "bin" / "cc-wrap"))
    monkeypatch.setenv("PATH", f"{home / '.local' / 'bin'}:{os.environ['PATH']}")
    assert not [p for p in sandbox.toolchain_paths() if p.startswith(str(tmp_path))]  # not below /opt or /usr/local
    env = sandbox.environment(dict(os.environ), "cpu")
    assert str(tmp_path) not in repr(env)
    # Even where a declared root holds the home, only the toolchain's own folders are bound, never the home.
    monkeypatch.setenv("ARENA_TOOLCHAIN_ROOTS", str(tmp_path))
    bound = sorted(p for p in sandbox.toolchain_paths() if p.startswith(str(tmp_path)))
    assert bound == [str(home / ".local" / "bin"), str(home / ".local" / "lib"), str(home / "bin")], bound


def _tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\nexec gcc "$@"\n')
    path.chmod(0o755)
    return path


def test_a_toolchain_is_bound_only_from_a_declared_root_and_from_its_prefixs_bin(monkeypatch, tmp_path):
    # A blocklist of homes missed homes it did not know, and a tool kept in a deployment's tools/ folder made the
    # deployment (its checkout, its .env) the "prefix" bound into every sandbox.
    deploy = tmp_path / "srv" / "arena"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ninja").symlink_to(_tool(deploy / "tools" / "ninja"))
    vendor = _tool(tmp_path / "opt" / "vendor" / "bin" / "cc-vendor")
    elsewhere = _tool(tmp_path / "var" / "lib" / "ci" / "bin" / "c++-ci")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("CC", str(vendor))
    monkeypatch.setenv("CXX", str(elsewhere))
    monkeypatch.setenv("ARENA_TOOLCHAIN_ROOTS", str(tmp_path / "opt"))
    bound = [p for p in sandbox.toolchain_paths() if p.startswith(str(tmp_path))]
    assert bound == [str(tmp_path / "opt" / "vendor" / "bin")]


def test_a_thunderkittens_checkout_is_bound_without_its_history_and_never_from_a_home(monkeypatch, tmp_path):
    home = tmp_path / "home" / "alice"
    for tk in (home / "ThunderKittens", tmp_path / "opt" / "ThunderKittens"):
        (tk / "include").mkdir(parents=True)
        (tk / "include" / "kittens.cuh").write_text("// headers\n")
        (tk / ".git").mkdir()
        (tk / ".git" / "config").write_text("[remote]\nurl = https://token@example.invalid/tk\n")
    monkeypatch.setattr(sandbox, "_homes", lambda: (str(home),))
    monkeypatch.setenv("ARENA_THUNDERKITTENS", str(home / "ThunderKittens"))
    assert sandbox.thunderkittens_path() is None
    kittens = tmp_path / "opt" / "ThunderKittens"
    monkeypatch.setenv("ARENA_THUNDERKITTENS", str(kittens))
    assert sandbox.thunderkittens_path() == str(kittens)
    for name in ("rt/evaluator", "sol", "io", "cache"):
        (tmp_path / "m" / name).mkdir(parents=True)
    (tmp_path / "m" / "timer.so").write_bytes(b"")
    m = tmp_path / "m"
    mounts = sandbox.Mounts(m / "rt", m / "timer.so", m / "sol", m / "io", m / "cache")
    try:
        argv = sandbox.command(mounts, ["true"], {}, "cpu", 1 << 20)
    except sandbox.SandboxUnavailable as exc:
        pytest.skip(str(exc))
    assert any(a == "--tmpfs" and b == str(kittens / ".git") for a, b in zip(argv, argv[1:])), argv


def test_a_toolchains_folders_are_bound_as_they_resolve_and_only_inside_it(monkeypatch, tmp_path):
    # bubblewrap follows links: a lib64 linked to a service's state folder, or an include linked to ".", bound those;
    # and CUDA_HOME pointed at a folder that is no toolkit bound it whole.
    prefix = tmp_path / "opt" / "svc"
    _tool(prefix / "bin" / "cc-svc")
    (prefix / "lib").mkdir()
    state = tmp_path / "var" / "lib" / "svc"
    state.mkdir(parents=True)
    (prefix / "lib64").symlink_to(state)
    (prefix / "include").symlink_to(".")
    (prefix / "libexec").symlink_to("lib")
    monkeypatch.setenv("CC", str(prefix / "bin" / "cc-svc"))
    monkeypatch.setenv("CUDA_HOME", str(prefix))
    monkeypatch.setenv("ARENA_TOOLCHAIN_ROOTS", str(tmp_path / "opt"))
    bound = sorted(p for p in sandbox.toolchain_paths() if p.startswith(str(tmp_path)))
    assert bound == [str(prefix / "bin"), str(prefix / "lib")], bound
