"""The containment pieces on their own: the rank's audit hook (run in a child process: audit hooks cannot be
removed), the integrity snapshot, the launcher's resource limits and its choice of user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from evaluator import sandbox

REPO = Path(__file__).resolve().parents[2]


def run_child(code: str, tmp_path: Path) -> dict:
    """Runs ``code`` in a fresh interpreter with the guard installed over a working directory in tmp_path; the
    code leaves its findings in the dict ``out``, which comes back as JSON."""
    workdir = tmp_path / "arena-eval-mine"
    for d in ("solution", "tmp", "home"):
        (workdir / d).mkdir(parents=True, exist_ok=True)
    other = tmp_path / "arena-eval-other" / "solution"
    other.mkdir(parents=True, exist_ok=True)
    (other / "solution.py").write_text("SECRET = 1\n")
    prelude = textwrap.dedent(f"""
        import json, os, sys
        from evaluator import guard
        workdir = {str(workdir)!r}
        config = {{"write_roots": [workdir + "/solution", workdir + "/tmp", workdir + "/home"]}}
        violations = guard.install(guard.Policy.from_config(workdir, config, ["NCCL_NVLS_ENABLE"]))
        os.chdir(workdir + "/solution")
        out = {{}}
        def attempt(name, fn):
            try:
                fn()
                out[name] = "allowed"
            except Exception as exc:
                out[name] = "refused: " + str(exc)
    """)
    epilogue = "\nout['violations'] = violations()\nprint('RESULT' + json.dumps(out))\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code) + epilogue], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, proc.stdout + proc.stderr
    return json.loads(line[-1][len("RESULT"):])


def test_audit_hook_refuses_and_records_what_the_rules_forbid(tmp_path: Path) -> None:
    out = run_child("""
        import gc, socket
        attempt("write inside", lambda: open("result.txt", "w").write("ok"))
        attempt("write tmp", lambda: open(workdir + "/tmp/x", "w").write("ok"))
        attempt("read library", lambda: open(os.__file__).read(10))
        attempt("write outside", lambda: open(os.path.dirname(workdir) + "/planted.txt", "w"))
        attempt("write config", lambda: open(workdir + "/config.json", "w"))
        attempt("read other", lambda: open(os.path.dirname(workdir) + "/arena-eval-other/solution/solution.py").read())
        attempt("list other", lambda: os.listdir(os.path.dirname(workdir) + "/arena-eval-other"))
        attempt("proc mem", lambda: open("/proc/self/mem", "rb"))
        attempt("connect out", lambda: socket.create_connection(("8.8.8.8", 53), timeout=0.2))
        attempt("bind loopback", lambda: socket.socket().bind(("127.0.0.1", 0)))
        attempt("bind all", lambda: socket.socket().bind(("0.0.0.0", 0)))
        attempt("multicast env", lambda: os.environ.__setitem__("NCCL_NVLS_ENABLE", "1"))
        attempt("other env", lambda: os.environ.__setitem__("MY_SETTING", "1"))
        attempt("gc objects", lambda: gc.get_objects())
        attempt("fork", lambda: os.fork())
        attempt("kill other", lambda: os.kill(1, 0))
        attempt("rename out", lambda: os.rename("result.txt", "/tmp/moved-by-test.txt"))
        guard._policy = None  # rebinding the module's globals does not turn the hook off
        guard._violations.clear()
        attempt("write outside after rebinding", lambda: open(os.path.dirname(workdir) + "/planted2.txt", "w"))
    """, tmp_path)
    allowed = {"write inside", "write tmp", "read library", "bind loopback", "other env"}
    for name, result in out.items():
        if name == "violations":
            continue
        assert result.startswith("allowed" if name in allowed else "refused"), (name, result)
    assert len(out["violations"]) == len(out) - 1 - len(allowed)
    assert any("planted.txt" in v for v in out["violations"])
    assert not (tmp_path / "planted.txt").exists() and not (tmp_path / "planted2.txt").exists()


def test_audit_hook_refuses_to_let_code_of_the_harness_be_replaced(tmp_path: Path) -> None:
    out = run_child("""
        import evaluator.correctness as c
        def other(): return 2
        attempt("harness function", lambda: setattr(c.compare, "__code__", other.__code__))
        attempt("audit hook", lambda: sys.addaudithook(lambda *a: None))
    """, tmp_path)
    assert out["harness function"].startswith("refused") and "evaluator.correctness.compare" in \
        out["harness function"]
    assert any("sys.addaudithook (called from <string> line" in v for v in out["violations"])


def test_libraries_that_add_their_own_audit_hook_are_loaded_before_the_guard_arms(tmp_path: Path) -> None:
    # filelock 4 adds a fork-safety audit hook when it loads on Python >= 3.12, and torch.compile imports it: a
    # solution using torch.compile must not be refused for what the library does on its own.
    out = run_child("""
        out["loaded before the solution ran"] = sorted(n for n in guard.LOADED_BEFORE_ARMING if n in sys.modules)
        attempt("import filelock", lambda: __import__("filelock"))
    """, tmp_path)
    assert out["loaded before the solution ran"] == ["filelock"]
    assert out["import filelock"] == "allowed" and out["violations"] == []


def test_integrity_snapshot_sees_replaced_added_and_swapped_things() -> None:
    code = textwrap.dedent("""
        import json, signal, sys, types, time, torch
        import torch.distributed as dist
        from evaluator import guard
        harness = types.ModuleType("harness_under_test")
        harness.limit = 3
        def helper(): return 1
        harness.helper = helper
        sys.modules["harness_under_test"] = harness
        def fresh():
            return guard.snapshot({"harness": harness}, {"time": time, "torch": torch, "torch.distributed": dist,
                                  "builtins": sys.modules["builtins"]}, {"torch.Tensor": torch.Tensor},
                                  guard.existing_operators(["aten::gt.Tensor"]))
        out = {}
        check = fresh()
        import torch._dynamo, torch.distributed._functional_collectives  # lazy imports are not tampering
        out["untouched"] = check()
        def probe(name, change, undo):
            c = fresh(); change(); out[name] = c(); undo()
        real = time.perf_counter
        probe("module attr", lambda: setattr(time, "perf_counter", lambda: 0.0), lambda: setattr(time, "perf_counter", real))
        probe("harness data", lambda: setattr(harness, "limit", 0), lambda: setattr(harness, "limit", 3))
        probe("harness added", lambda: setattr(harness, "len", lambda x: 0), lambda: delattr(harness, "len"))
        probe("class added", lambda: setattr(torch.Tensor, "__bool__", lambda s: True),
              lambda: delattr(torch.Tensor, "__bool__"))
        code = helper.__code__
        probe("code", lambda: setattr(helper, "__code__", (lambda: 2).__code__), lambda: setattr(helper, "__code__", code))
        probe("sys.modules", lambda: sys.modules.__setitem__("harness_under_test", types.ModuleType("x")),
              lambda: sys.modules.__setitem__("harness_under_test", harness))
        old = signal.getsignal(signal.SIGUSR1)
        probe("signal", lambda: signal.signal(signal.SIGUSR1, lambda *a: None), lambda: signal.signal(signal.SIGUSR1, old))
        b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
        real_len = b["len"]
        probe("builtin", lambda: b.__setitem__("len", lambda x: 0), lambda: b.__setitem__("len", real_len))
        from torch.overrides import TorchFunctionMode
        mode = TorchFunctionMode()
        probe("mode", mode.__enter__, lambda: mode.__exit__(None, None, None))
        import functools
        real_ar = dist.all_reduce
        slow = functools.wraps(real_ar)(lambda *a, **k: (time.sleep(0.001), real_ar(*a, **k))[1])
        probe("wrapped", lambda: setattr(dist, "all_reduce", slow), lambda: setattr(dist, "all_reduce", real_ar))
        lib = torch.library.Library("aten", "IMPL")
        probe("operator", lambda: lib.impl("gt.Tensor", lambda a, b: a, "CPU"), lambda: None)
        print("RESULT" + json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, proc.stdout + proc.stderr
    out = json.loads(line[-1][len("RESULT"):])
    assert out.pop("untouched") is None
    expect = {"module attr": "time.perf_counter", "harness data": "harness.limit", "harness added": "harness.len",
              "class added": "torch.Tensor.__bool__", "code": "harness.helper", "sys.modules": "harness_under_test",
              "signal": "SIGUSR1", "builtin": "builtins.len", "mode": "mode active", "operator": "aten::gt.Tensor",
              "wrapped": "torch.distributed.all_reduce"}
    for name, needle in expect.items():
        assert out[name] and needle in out[name], (name, out[name])


def test_limits_take_address_space_on_cpu_and_data_only_when_asked_on_gpu(monkeypatch) -> None:
    monkeypatch.delenv("ARENA_RANK_MEMORY_GB", raising=False)
    timeouts = {"setup": 100.0, "correctness": 100.0, "timing": 100.0}
    cpu = sandbox.plan("cpu", timeouts, "x = 1")
    assert cpu.limits["RLIMIT_AS"][0] == 8 * sandbox.GiB and cpu.limits["RLIMIT_CORE"] == (0, 0)
    assert cpu.limits["RLIMIT_CPU"][0] == 4 * 300 + 60
    gpu = sandbox.plan("cuda", timeouts, "x = 1")
    assert "RLIMIT_AS" not in gpu.limits and "RLIMIT_DATA" not in gpu.limits
    monkeypatch.setenv("ARENA_RANK_MEMORY_GB", "64")
    assert sandbox.plan("cuda", timeouts, "x = 1").limits["RLIMIT_DATA"][0] == 64 * sandbox.GiB
    assert cpu.cache_dir.name == sandbox.solution_cache_key("x = 1")
    assert sandbox.plan("cpu", timeouts, "x = 2").cache_dir != cpu.cache_dir


def test_limits_are_applied_in_the_child_before_it_runs() -> None:
    plan = sandbox.plan("cpu", {"setup": 10.0}, "x = 1")
    code = "import resource; print(resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_CORE)[0])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=plan.preexec())
    assert proc.stdout.split() == [str(plan.limits["RLIMIT_CPU"][0]), "0"]


def test_sandbox_user_is_used_only_when_it_can_reach_the_interpreter() -> None:
    base = Path(tempfile.mkdtemp(prefix="arena-test-user-"))
    os.chmod(base, 0o755)
    locked = base / "locked"
    (locked / "bin").mkdir(parents=True)
    os.chmod(locked, 0o700)
    python = locked / "bin" / "python"
    python.write_text("")
    os.chmod(python, 0o755)
    blocked = sandbox._unreachable(65534, {65534}, [(str(python), 5)])
    assert blocked == str(locked)
    os.chmod(locked, 0o755)
    assert sandbox._unreachable(65534, {65534}, [(str(python), 5)]) is None
    uid, gid, user, why = sandbox._sandbox_user("cpu", str(python))
    if os.geteuid() != 0:
        assert uid is None and "not root" in why
    else:
        assert user in ("nobody", "root", os.environ.get("ARENA_SANDBOX_USER", "nobody")) and why
    shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a working directory to another user")
def test_prepared_working_directory_belongs_to_the_sandbox_user(tmp_path: Path) -> None:
    plan = sandbox.Containment(device="cpu", uid=65534, gid=65534, user="nobody",
                               cache_root=tmp_path / "cache", cache_dir=tmp_path / "cache" / "k")
    workdir = tmp_path / "arena-eval-x"
    (workdir / "solution").mkdir(parents=True)
    config = plan.prepare(workdir)
    assert (workdir / "tmp").stat().st_uid == 65534 and (workdir.stat().st_mode & 0o777) == 0o700
    assert (plan.cache_dir.stat().st_uid, plan.cache_dir.stat().st_mode & 0o777) == (65534, 0o700)
    assert str(plan.cache_dir) in config["write_roots"]
