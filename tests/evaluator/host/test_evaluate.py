"""Known-answer tests of the evaluator on the CPU profiles: each verdict a user can get, from real rank processes."""

import os
import subprocess
import sys
import time
from pathlib import Path


from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from evaluator.host.evaluate import evaluate
from evaluator.contract.spec import EvalSpec

HERE = Path(__file__).resolve().parents[1] / "solutions"
ALL_REDUCE = Path(__file__).resolve().parents[3] / "problems" / "collectives" / "all_reduce" / "solutions"


def run(path: Path, profile: str = "cpu-gloo-2", **kw) -> dict:
    return evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=path.read_text(),
            profile=profile,
            solution_name=path.name,
            **kw,
        )
    )


def rank_processes(under: Path | None = None) -> list[str]:
    """Rank processes still alive (only those of evaluations under ``under``: other runs may share the host)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "evaluator.rank" in cmd and (under is None or str(under) in cmd):
                found.append(cmd)
    return found


def test_correct_all_reduce_passes_with_timings_and_roofline():
    doc = run(ALL_REDUCE / "correct" / "nccl_inplace_copy.py")
    assert doc["verdict"] == "passed", doc["message"]
    assert len(doc["trials"]) == 5 and all(r["ok"] for t in doc["trials"] for r in t["ranks"])
    assert doc["timing"]["baseline"]["median_us"] > 0 and doc["timing"]["solution"]["median_us"] > 0
    assert doc["timing"]["speedup_ci"][0] <= doc["timing"]["speedup"] <= doc["timing"]["speedup_ci"][1]
    assert doc["roofline"]["time_us"] > 0 and 0 < doc["roofline"]["solution_fraction"] < 1
    assert doc["problem"]["version"] == 1 and len(doc["problem"]["content_hash"]) == 64
    assert doc["timing"]["protocol_revision"] == TIMING_PROTOCOL_REVISION
    assert doc["timing"]["input_feed"] == "host"  # CPU hosts: no device memory to hand the inputs over in
    assert doc["timing"]["output_feed"] == "host"
    assert doc["timing"]["input_staging"] == "host"  # each call's own storage takes the inputs straight from the feed
    # Where each side's time went, for whoever reads a host-clock refusal: staging by the host's clock, and each
    # side's own account of its steps.
    clock = doc["timing"]["host_clock"]
    assert 0 < clock["solution_staging_us"] < clock["solution_window_us"]
    assert 0 < clock["baseline_staging_us"] < clock["baseline_window_us"]
    for side in ("solution", "baseline"):
        assert set(clock["steps_median_us"][side]) == {"measure", "save", "calls", "between"}
    # Each timed window counted once, under the side that was timed first in it.
    orders = clock["by_order"]
    assert orders["baseline_first"]["windows"] + orders["solution_first"]["windows"] == doc["timing"]["iterations"]
    # Where the set-up's time went: each sandbox's import, then the ranks' process group and warmed runtime.
    line = doc["timeline"]
    assert 0 < line["sandbox_process_group"] <= line["sandbox_runtime_warmed"] <= line["sandbox_booted"]
    assert 0 < line["sandbox_imported"] <= line["sandbox_booted"]
    assert 0 < line["judge_imported"] <= line["judge_prepared"]
    assert doc["containment"]["started_ahead"] is False


def test_a_build_tool_left_running_after_its_call_is_refused():
    # The host's own shell (a build tool, from its installed path) started in the first call sends SIGCONT to every
    # process it can see, endlessly. A build runs inside the call that needs it: once the calls have returned, a
    # build tool still there is a helper of the solution's (a red team kept one alive through the timing phase,
    # holding a peer's feed descriptor and waiting for a signal), refused at the first look after a trial.
    doc = run(HERE / "continued_by_a_shell.py")
    assert doc["verdict"] == "rejected", doc["message"]
    assert "a build tool ran on after the call that started it returned" in doc["message"], doc["message"]
    assert "/bin/sh" in doc["message"]
    assert doc["timing"] is None


def test_off_on_one_rank_is_wrong_output_naming_that_rank():
    doc = run(ALL_REDUCE / "wrong" / "off_on_one_rank.py", profile="cpu-gloo-4")
    assert doc["verdict"] == "wrong_output"
    assert doc["failed_ranks"] == [3]
    assert "rank 3" in doc["message"] and "differ" in doc["message"]
    assert doc["timing"] is None


def test_raise_on_rank1_is_runtime_error_naming_rank1():
    doc = run(HERE / "raises_on_rank1.py")
    assert doc["verdict"] == "runtime_error"
    assert doc["failed_ranks"] == [1]
    assert "rank 1" in doc["message"] and "deliberate failure on rank 1" in doc["message"]


def test_hang_on_rank0_times_out_within_limit_and_leaves_no_process(tmp_path):
    limits = {"setup": 6.0, "correctness": 6.0, "timing": 6.0}
    started = time.monotonic()
    path = HERE / "hangs_on_rank0.py"
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source=path.read_text(),
            solution_name=path.name,
            timeouts=limits,
        ),
        workdir_parent=str(tmp_path),
    )
    elapsed = time.monotonic() - started
    assert doc["verdict"] == "timeout"
    assert 0 in doc["failed_ranks"]
    assert "setup" in doc["message"]
    assert elapsed < limits["setup"] + 10
    assert rank_processes(tmp_path) == []


def test_syntax_error_is_compile_error_on_every_rank():
    doc = run(HERE / "syntax_error.py")
    assert doc["verdict"] == "compile_error"
    assert doc["failed_ranks"] == [0, 1]
    assert "SyntaxError" in doc["message"]


def test_world_size_the_problem_does_not_support_is_refused_before_launch(tmp_path):
    from evaluator.contract.profiles import PROFILES

    assert "cpu-gloo-4" in PROFILES
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            solution_source="def solution(x): return x",
            profile="cpu-gloo-2",
            problem_version=99,
        )
    )
    assert doc["verdict"] == "infra_error" and "version" in doc["message"]


def test_cli_eval_exits_zero_and_prints_the_verdict():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "eval",
            "--problem",
            "collectives/all_reduce",
            "--solution",
            str(ALL_REDUCE / "wrong" / "off_on_one_rank.py"),
            "--no-timing",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 0, proc.stderr
    assert "verdict: wrong_output" in proc.stdout


def test_cli_eval_unknown_problem_says_so_and_exits_two():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "eval",
            "--problem",
            "nope/nothing",
            "--solution",
            str(ALL_REDUCE / "correct" / "nccl_inplace_copy.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 2
    assert "unknown problem 'nope/nothing'" in proc.stderr


def test_a_timed_iterations_inputs_reach_the_solutions_feed_slot_only_once_its_window_has_opened(monkeypatch):
    # The ranks hold descriptors of their feed slots from the start: inputs written there before the host's clock
    # starts the solution's window could be read, and the work done on them, off every clock (a signal handler in
    # the idle rank did that). So when the window opens, the slot holds no inputs at all: each rank's engine zeroed
    # the last ones it read, and this iteration's are written only inside the window.
    from evaluator.host import timing_pass

    original = timing_pass._time_solution
    seen: list[tuple[int, bool]] = []
    links: set[str] = set()

    def watched(session, windows, i, record, limit_s, then=None):
        slots = [session.feed_fds[r] for r in range(session.world_size)]
        empty_before = all(not any(os.pread(fd, os.fstat(fd).st_size, 0)[16:]) for fd in slots)
        # A memory file: the rank's descriptor names no folder of the host's.
        links.update(os.readlink(f"/proc/{pid}/fd/{session.feed_fds[r]}") for r, pid in session.rank_pids.items())
        result = original(session, windows, i, record, limit_s, then)
        seen.append((i, empty_before))
        return result

    monkeypatch.setattr(timing_pass, "_time_solution", watched)
    doc = run(ALL_REDUCE / "correct" / "nccl_inplace_copy.py")
    assert doc["verdict"] == "passed", doc["message"]
    assert seen and all(changed for _, changed in seen), seen
    assert links == {"/memfd:arena-feed (deleted)"}


def test_the_solutions_window_opens_only_once_the_judges_are_done_with_the_baselines_outputs(monkeypatch):
    # The judge fingerprints the baseline's outputs after its reply (outside the baseline's window); a solution timed
    # next had that work in its own window, inside the judge's writing of its inputs (several ms a window on one
    # H100), which the host's clock then counted against it.
    from evaluator.host import timing_pass

    original = timing_pass._time_solution
    pending: list[int] = []

    def watched(session, windows, i, record, limit_s, then=None):
        for judge in session.judges:
            baselined = {m["i"] for m in judge.of_kind("baselined")}
            kept = {m["i"] for m in judge.of_kind("kept")}
            pending.extend(sorted(baselined - kept))
        return original(session, windows, i, record, limit_s, then)

    monkeypatch.setattr(timing_pass, "_time_solution", watched)
    doc = run(ALL_REDUCE / "correct" / "nccl_inplace_copy.py")
    assert doc["verdict"] == "passed", doc["message"]
    assert pending == []


def test_the_proof_of_the_ranks_stop_weighs_on_both_windows_alike(monkeypatch):
    # Before the host continues the held ranks it reads every held thread (Session.prove_stop), about 0.7 ms on a GPU
    # host's ranks, inside the solution's window; with nothing like it in the baseline's, the host's clock refused
    # honest identical code on one H100. The baseline's window now makes the same reading. Here it is made slow
    # (20 ms): the solution must still pass, its windows as long as the baseline's.
    from evaluator.host import session as host_session

    original = host_session.watch.ran_while_held
    proofs: list[float] = []

    def slow(held, pids):
        time.sleep(0.02)
        proofs.append(time.monotonic())
        return original(held, pids)

    monkeypatch.setattr(host_session.watch, "ran_while_held", slow)
    doc = run(ALL_REDUCE / "correct" / "nccl_inplace_copy.py")
    assert doc["verdict"] == "passed", doc["message"]
    assert len(proofs) > 20
    clock = doc["timing"]["host_clock"]
    assert clock["solution_window_us"] < clock["baseline_window_us"] + 10_000, clock


def test_an_evaluation_leaves_nothing_behind_in_the_hosts_temporary_folder(tmp_path):
    # The runtime the sandbox sees used to be staged once per worker process in /tmp and never removed: one folder per
    # job on a forking worker, for good.
    import tempfile

    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("arena-*"))
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            profile="cpu-gloo-2",
            solution_name="s.py",
            solution_source=(ALL_REDUCE / "correct" / "nccl_inplace_copy.py").read_text(),
        ),
        workdir_parent=str(tmp_path),
    )
    assert doc["verdict"] == "passed", doc["message"]
    assert set(temp.glob("arena-*")) - before == set()
    assert list(tmp_path.iterdir()) == []


def test_a_timed_window_of_several_calls_checks_every_call_and_reports_figures_per_call():
    # Three calls per window, each on inputs of its own, every call's outputs checked against the baseline's on the
    # same inputs; the figures, the host's clock and its allowance are per call.
    doc = run(
        ALL_REDUCE / "correct" / "nccl_inplace_copy.py", timing_iterations=6, warmup_iterations=2, min_window_calls=3
    )
    assert doc["verdict"] == "passed", doc["message"]
    timing = doc["timing"]
    assert timing["calls_per_window"] == 3 and timing["iterations"] == 6
    assert timing["host_clock"]["calls_per_window"] == 3
    assert timing["rechecked_outputs"] == 6 * 2  # every timed window, on each of the two ranks
    assert timing["solution"]["median_us"] < timing["host_clock"]["solution_window_us"]


def test_a_wrong_output_in_any_call_of_a_window_is_caught():
    doc = run(HERE / "wrong_when_timed_late_call.py", timing_iterations=4, warmup_iterations=1, min_window_calls=4)
    assert doc["verdict"] == "rejected", doc["message"]
    assert "outputs produced while being timed were wrong" in doc["message"]


def test_a_call_of_a_window_is_judged_by_its_outputs_as_it_returned_not_as_a_later_call_left_them():
    doc = run(HERE / "deferred_to_last_call.py", timing_iterations=4, warmup_iterations=1, min_window_calls=4)
    assert doc["verdict"] == "rejected", doc["message"]
    assert "outputs produced while being timed were wrong" in doc["message"]


def test_a_solution_that_returns_one_kept_buffer_from_every_call_passes_in_windows():
    doc = run(HERE / "persistent_output_buffer.py", timing_iterations=4, warmup_iterations=1, min_window_calls=4)
    assert doc["verdict"] == "passed", doc["message"]
    # Four asked; a loaded host's slower warm-up calls can leave room for fewer in the window's budget
    # (batch.within_budget), and every window of several calls returns the one buffer several times.
    assert 2 <= doc["timing"]["calls_per_window"] <= 4


def test_windows_a_slow_warm_up_cut_short_are_timed_again_at_the_size_the_timed_calls_allow():
    doc = run(HERE / "slow_warm_up_only.py", timing_iterations=4, warmup_iterations=2, min_window_calls=8)
    assert doc["verdict"] == "passed", doc["message"]
    clock = doc["timing"]["host_clock"]
    # Timed again at the size its timed calls allow within the window's budget: all 8 asked for where a call takes
    # under 6.25 ms by the host's clock, fewer on a loaded machine, but at least twice the one the warm-up left.
    assert clock["retimed_from"] == 1 and 2 <= doc["timing"]["calls_per_window"] <= 8


def test_a_copy_of_the_reference_importing_its_helpers_passes():
    """A solution that starts as its problem's reference keeps ``from problems.common import ...``: the static
    checks allow it, so the sandbox must have the module."""
    from problems.registry import get

    source = get("collectives/all_reduce").reference_source
    assert "from problems.common import" in source
    doc = evaluate(EvalSpec(problem_id="collectives/all_reduce", solution_source=source, profile="cpu-gloo-2"))
    assert doc["verdict"] == "passed", doc["message"]
