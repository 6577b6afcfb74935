"""The cheat suite: every known way to game the evaluator, each with the verdict it must get, and honest solutions
that must pass — from real sandboxed ranks judged by separate judge processes.

CHEATS and HONEST are the one table; benchmarks/cheat_suite.py runs the same table on a GPU profile. Each cheat's
docstring says what it tries. ``where``: "any" (every profile), "gpu" (needs CUDA; skipped here), "cpu" (only
meaningful on the CPU profiles). ``says``: the verdict's message names the reason (any of these substrings).

Three kinds of cheat, three kinds of assertion:
  - containment (write outside, network, read another evaluation, see the reference or the judge's secrets): the
    verdict is whatever an honest judge gives the computation the cheat does, AND nothing escaped — no file on the
    host, no connection to the test's listener, the decoy evaluation's data and the judge's secrets nowhere in the
    result or the logs, no process left;
  - harness tampering (patch timers, comparisons, the harness's classes, frames, the process group): the cheat gains
    nothing — it is refused or its garbage is judged wrong, or, where it only fakes time, the speedup stays below
    NO_GAIN (a harness that shared the process with it would have read several times the baseline);
  - broken rules (threads, processes, multicast, aliasing, forged samples): ``rejected`` with the reason named.

Cheat sources may name ARENA_TEST_REPO, ARENA_TEST_PARENT, ARENA_TEST_DECOY (ARENA_TEST_DECOY_HEX, hex-encoded),
ARENA_TEST_PORT and ARENA_TEST_ADDRS: the test writes in the exact host paths, port and addresses it then checks, so
each cheat knows what an attacker who knew the host would know.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluator.contract.profiles import PROFILES
from evaluator.contract.spec import EvalSpec
from evaluator.host.evaluate import _secrets, evaluate

HERE = Path(__file__).resolve().parent
CHEATS_DIR = HERE / "cheats"
HONEST_DIR = HERE / "honest"
REPO = HERE.parents[1]
PROBLEM = "collectives/all_reduce"
# The test-only profile of the "too fast" case: cpu-gloo-2 with a link so slow that its roofline is about a
# second, so any real run is "faster than physics". It exists only while that test runs.
RIGGED_PROFILE = "cpu-gloo-2-rigged-roofline"
HANG_TIMEOUTS = {"setup": 90.0, "correctness": 4.0, "timing": 30.0}
TRIALS = 2  # the call-counting cheats assume this many trials (they read ARENA_TRIALS, default 2)
NO_GAIN = 4.0  # identical code reads ~1 (± ~1 on shared CPUs); the time-faking cheats would read ~10
SEED = 8_675_309  # pinned for the cases that look for the judge's secrets, so the test knows them
OUTSIDE = "arena-cheat-outside"
SLOW = os.environ.get("ARENA_SLOW_TESTS") == "1"


@dataclass(frozen=True)
class Case:
    file: str  # relative to tests/evaluator (or to the repository, for shared solutions)
    expected: str
    says: tuple[str, ...] = ()
    where: str = "any"
    timeouts: dict[str, float] | None = None
    profile: str | None = None  # CPU runs only: a test-only profile instead of the suite's
    decoy: bool = False  # make another evaluation's working directory beside this one first; its data must not leak
    leaves_no: str = ""  # no process whose command line holds this may survive the evaluation
    problem: str = PROBLEM
    no_gain: bool = False  # a passed verdict must show no speedup (below NO_GAIN, or gain_below where given)
    gain_below: float = 0.0  # GPU cases of honest computation: the speedup must stay below this
    outside: tuple[str, ...] = ()  # host paths (placeholders allowed) that must not exist afterwards
    listen: bool = False  # the test listens on a port; no connection may arrive
    secret_free: bool = False  # pinned seeds; none of the judge's secrets may appear in the result
    log_has: tuple[str, ...] = ()  # the cheat's own report, proving it ran and found nothing
    log_lacks: tuple[str, ...] = ()  # what the cheat says when it found what it looked for
    communicates: bool = True  # honest: the collectives flags must show communication
    slow: bool = False  # honest: a long build; runs with ARENA_SLOW_TESTS=1 (and in benchmarks/cheat_suite.py)
    known_open: str = ""  # a hole not closed yet: the test is an expected failure saying why
    # A race the cheat can lose (GPU gates): then it says ARENA_RT_ABSENT and does honest work, and a passed verdict
    # with no gain stands for the expected one. What is counted is its gain, not which way the race went.
    loses_race: bool = False
    fills: tuple[tuple[str, str], ...] = ()  # further names the test writes into the source (one file, two cases)
    label: str = ""  # the case's name when one file serves two cases
    host_paths_free: bool = False  # neither the evaluation's folder on the host nor the build cache's is in the result
    params: tuple[tuple[str, int], ...] = ()  # the problem's size, where the profile's preset is not the point

    @property
    def name(self) -> str:
        return self.label or Path(self.file).stem


_FILES = tuple(
    f"{d}/{OUTSIDE}{s}"
    for d in ("/tmp", "/var/tmp", "ARENA_TEST_REPO", "ARENA_TEST_PARENT")
    for s in (".txt", "-torch.pt", "-dirfd.txt")
)

CHEATS: list[Case] = [
    # Wrong answers and broken contracts.
    Case("cheats/constant_output.py", "wrong_output", ("differ",)),
    Case("cheats/return_input.py", "rejected", ("shares memory with input 0",)),
    Case("cheats/alias_through_dlpack.py", "rejected", ("shares memory with input 0",)),
    Case("cheats/mutate_inputs.py", "rejected", ("shares memory with input 0", "must not write to its inputs")),
    Case("cheats/scratch_in_input.py", "rejected", ("must not write to its inputs",)),
    Case("cheats/tensor_subclass_eq.py", "rejected", ("subclass",)),
    Case("cheats/deferred_result_tuple.py", "wrong_output", ("expected a plain torch.Tensor",)),
    Case("cheats/input_dtype_swap.py", "rejected", ("must not write to its inputs", "no longer owns the storage")),
    # Results that depend on being timed.
    # Every call gets new tensors in new storage: a cache keyed by the input object never hits.
    Case("cheats/cache_by_data_ptr.py", "passed", no_gain=True),
    Case("cheats/cache_by_call_count.py", "rejected", ("while being timed",)),
    Case("cheats/garbage_when_timed.py", "rejected", ("while being timed",)),
    # Work left on a side stream is either unfinished when the outputs are copied (wrong while timed) or, when the
    # untimed work is most of the call, faster than the hardware allows (one H200, one rank, bench sizes).
    Case("cheats/side_stream_unjoined.py", "rejected", ("while being timed", "physically impossible"), where="gpu"),
    # Work on a side stream that does not wait for the call's stream, joined before the stop: the call's inputs reach
    # the device feed only at the gate, after the judge's spin, and the device runs one context at a time, so the side
    # stream's copy runs once the judge's context has released the gate, beside the call (one H100: 0.87×).
    Case("cheats/side_stream_under_spin.py", "passed", where="gpu", no_gain=True, gain_below=1.3),
    # The inputs wait under the spin in the engine's staging buffer, memory of its own beside the device feed: not a
    # block of the caching allocator's, which memory_snapshot() lists to the solution.
    Case(
        "cheats/staging_from_allocator.py",
        "passed",
        where="gpu",
        no_gain=True,
        gain_below=1.3,
        log_has=("ARENA_STAGING_ABSENT",),
        log_lacks=("ARENA_STAGING_FOUND",),
    ),
    # A red team's routes to the staging buffer of revision 14 (docs/threat-model.md): the process's own memory file is
    # closed to it; the engine's table read through ctypes, and the driver's pointer queries, find the buffer.
    Case(
        "cheats/staging_via_own_memory_file.py",
        "passed",
        where="gpu",
        no_gain=True,
        gain_below=1.3,
        log_has=("ARENA_RT_ABSENT",),
        log_lacks=("ARENA_RT_FOUND",),
    ),
    *(
        Case(
            f"cheats/staging_via_{route}.py",
            "passed",
            where="gpu",
            no_gain=True,
            gain_below=1.3,
            log_lacks=("ARENA_RT_FOUND",),
        )
        for route in ("engine_symbol", "maps_and_pointer_query", "address_probe")
    ),
    # A red team's routes through the gate of revision 15 (docs/threat-model.md): the inputs reach the device feed only
    # once the call's stream has armed the gate and the judge has spun; the release is memory only the judge writes.
    # Written without a GPU and not yet run on one: the rows say what the design predicts.
    # Every host route to the release page is refused; the last try, a store through the page's device address,
    # faults (the page is registered for the device read-only) and ends the rank.
    Case(
        "cheats/gate_unrelease_race.py",
        "runtime_error",
        where="gpu",
        log_has=("ARENA_RT_TRY device_store attempting",),
        log_lacks=("ARENA_RT_FOUND",),
    ),
    Case(
        "cheats/gate_token_next_call.py",
        "passed",
        where="gpu",
        no_gain=True,
        gain_below=1.3,
        log_has=("ARENA_RT_ABSENT",),
        log_lacks=("ARENA_RT_FOUND",),
    ),
    # On one H100 it forged and was refused in one run, and lost its race (no arming forged in eight tries) in two.
    Case(
        "cheats/gate_forge_armed_with_hog.py",
        "rejected",
        ("was armed by something other than the call's stream",),
        where="gpu",
        gain_below=1.3,
        log_lacks=("ARENA_RT_FOUND",),
        loses_race=True,
    ),
    # Its second record of the engine's arming event made the wait look shorter, not longer: refused thrice on H100s
    # (benchmarks/results/gate_gpu_2026-12-07_h100_identical_reference.md).
    Case(
        "cheats/gate_armed_event_rerecord.py",
        "rejected",
        ("was armed by something other than the call's stream",),
        where="gpu",
        gain_below=1.3,
        log_lacks=("ARENA_RT_FOUND",),
        loses_race=True,
    ),
    Case(
        "cheats/gate_poll_as_they_land.py",
        "passed",
        where="gpu",
        no_gain=True,
        gain_below=1.3,
        log_lacks=("ARENA_RT_FOUND",),
        known_open="a kernel reading the inputs as the judge's gate copies them in gets up to the copy's length as a "
        "head start (docs/threat-model.md)",
    ),
    # The engine's tables are sealed, but the backend object they point to is heap memory: its table of virtual
    # functions re-pointed (to an identical copy) ends the rank at the engine's next alignment.
    Case(
        "cheats/backend_vtable_swap.py",
        "rejected",
        ("altered an object the evaluator's engine calls through",),
        log_has=("ARENA_BACKEND_VTABLE_SWAPPED",),
    ),
    # libstdc++'s table of library addresses is lazily bound (writable, unsealable): its malloc entry re-pointed at a
    # trampoline of the solution's is found as the call returns, before the engine allocates through it.
    Case(
        "cheats/got_plt_hook.py",
        "rejected",
        ("altered an object the evaluator's engine calls through",),
        log_has=("ARENA_GOT_HOOKED",),
    ),
    # The engine's start event recorded again as the call ends (its handle is readable in the sealed table): the event
    # sample covers nothing of the call. What holds is the host's clock, whose floor on GPU hosts is many calls of
    # the bench all-reduce's size (docs/threat-model.md).
    Case(
        "cheats/event_rerecord_start.py",
        "rejected",
        ("host's clock", "impossible"),
        log_has=("ARENA_START_EVENT_FOUND",),
        where="gpu",
        known_open="the engine's events are readable in its own process, and a forged sample is bounded by the host's "
        "clock alone, whose floor on GPU hosts (about 0.4 ms a window) is many calls of 9 µs",
    ),
    # The device's L2 set-aside for persisting accesses filled after each call, so the baseline (timed next, in
    # another process) would run its GEMM in a fraction of the cache: every timed call on both sides starts with no
    # set-aside and no persisting line. Honest computation: identical code reads 1.00 ± 0.01 on GEMM-sized problems.
    Case(
        "cheats/l2_persisting_lines.py",
        "passed",
        no_gain=True,
        gain_below=1.05,
        problem="tensor-parallel/gemm_all_reduce",
        log_has=("ARENA_L2_SET_ASIDE",),
        where="gpu",
    ),
    # Harness tampering: nothing of the judge or of its timer is in the solution's process.
    Case("cheats/patch_perf_counter.py", "passed", no_gain=True),
    Case("cheats/patch_elapsed_time.py", "rejected", ("KernelGuard's rule TIMER_MONKEYPATCH",)),
    Case("cheats/slow_baseline.py", "passed", no_gain=True),
    Case("cheats/frames_baseline_times.py", "passed", no_gain=True),
    Case("cheats/finalizer_and_settings.py", "passed", no_gain=True),
    Case("cheats/patch_comparison.py", "wrong_output", ("differ",)),
    Case("cheats/patch_compare_sys_modules.py", "wrong_output", ("differ",)),
    Case("cheats/patch_harness_class.py", "wrong_output", ("differ",)),
    # no Python timing loop left to rebind
    Case("cheats/rebind_timed_loop.py", "passed", no_gain=True, log_has=("ARENA_MEASURE_NOT_PATCHED",)),
    Case("cheats/rebind_tensor_detach.py", "wrong_output", ("differ", "NaN/Inf")),
    Case("cheats/rebind_json_dumps.py", "wrong_output", ("differ", "NaN/Inf")),
    # The classes a held-out round found in the harness itself: inputs refilled in place, descriptors passed between
    # ranks, the evaluator's Python rebound in the rank, handlers that run between calls.
    Case("cheats/refill_into_shared_storage.py", "rejected", ("no longer owns the storage",)),
    Case(
        "cheats/peer_feed_over_socket.py",
        "rejected",
        ("a descriptor of rank",),
        log_lacks=("ARENA_PEER_FEED_READ",),
    ),
    Case("cheats/peer_feed_mapped_then_closed.py", "rejected", ("a mapping of rank 1's feed slot",)),
    Case("cheats/rebind_json_loads.py", "passed", no_gain=True, log_lacks=("ARENA_JSON_HOOK_RAN",)),
    # Its handler is put back to the harness's (ignore) as its call returns: its ticks between calls run nothing.
    Case("cheats/signal_handler_idle_work.py", "passed", no_gain=True),
    # A SIGCONT the kernel generates (a POSIX timer's) continues a process the host stopped between calls.
    Case("cheats/timer_continues_the_stop.py", "rejected", ("ran while the host held it stopped",)),
    Case("cheats/named_threads_slow_baseline.py", "rejected", ("named like a library's thread, with Python code",)),
    Case(
        "cheats/native_thread_named_like_gloo.py",
        "rejected",
        ("named like a library's thread, with code from executable memory of no file",),
    ),
    # Outputs are taken by compiled code at the call's return, with the collector off and the call's garbage kept
    # until the next call's clock has started: work left to a finalizer is not in them.
    Case("cheats/finalizer_after_return.py", "wrong_output", ("differ", "NaN/Inf")),
    # No Python of the evaluator's frames a timed call any more: the hook never learns it is timed, and the solution
    # computes in its call.
    Case("cheats/profile_hook_after_timer.py", "passed", no_gain=True),
    # Inputs no longer pass through files in the exchange folder, and nothing in the sandbox makes a name there (the
    # folders are the host's): the folder at their old name is refused as it is made.
    Case("cheats/block_next_input_name.py", "runtime_error", ("PermissionError",)),
    Case("cheats/gc_harness_state.py", "wrong_output", ("differ",)),
    Case("cheats/dispatch_mode_compare.py", "wrong_output", ("differ",)),
    Case("cheats/aten_override.py", "wrong_output", ("differ",)),
    Case("cheats/replace_default_pg.py", "wrong_output", ("differ",)),
    Case("cheats/frames_tolerance.py", "wrong_output", ("differ",)),
    # Forged channels and samples.
    Case(
        "cheats/forge_result_channel.py",
        "rejected",
        ("channel to the host", "evaluator's timer"),
        outside=("/tmp/arena-forged-result.json",),
    ),
    Case("cheats/forge_timer_fd.py", "rejected", ("evaluator's timer",)),
    Case("cheats/forge_infra_report.py", "runtime_error", ("failed in the correctness phase",)),
    # Replies written ahead of their commands, a flood of reports of no kind a rank writes, a reply written twice.
    Case(
        "cheats/reply_ahead_of_command.py",
        "rejected",
        ("to no command",),
        fills=(("ARENA_TEST_AHEAD", "timed"),),
        label="reply_ahead_of_command",
    ),
    Case(
        "cheats/reply_ahead_of_command.py",
        "rejected",
        ("evaluator's reports",),
        fills=(("ARENA_TEST_AHEAD", "junk"),),
        label="reply_ahead_with_junk_reports",
    ),
    Case(
        "cheats/reply_ahead_of_command.py",
        "rejected",
        ("to no command",),
        fills=(("ARENA_TEST_AHEAD", "twice"),),
        label="reply_twice",
    ),
    Case(
        "cheats/forge_report_fields.py",
        "rejected",
        ("evaluator's reports",),
        fills=(("ARENA_TEST_FORGED", "calls"),),
        label="forge_report_count_type",
    ),
    Case(
        "cheats/forge_report_fields.py",
        "rejected",
        ("evaluator's reports",),
        fills=(("ARENA_TEST_FORGED", "rank"),),
        label="forge_report_other_rank",
    ),
    Case(
        "cheats/forge_report_fields.py",
        "rejected",
        ("evaluator's reports",),
        fills=(("ARENA_TEST_FORGED", "host_field"),),
        label="forge_report_host_field",
    ),
    Case(
        "cheats/forge_report_fields.py",
        "rejected",
        ("evaluator's reports",),
        fills=(("ARENA_TEST_FORGED", "booted"),),
        label="forge_report_second_boot",
    ),
    # The key read from memory, and samples forged through a hook on the engine's entry for write in its table of
    # library addresses, put back before the stop so that every byte the host compares is as it was. The engine seals
    # that table, its own tables and every loaded object's code before the solution loads (mseal): the page cannot be
    # made writable again, so nothing is forged, on calls long (a fifth of a quarter second hidden) or short (a fifth,
    # a fiftieth, or nothing claimed), on CPU and GPU hosts alike.
    Case(
        "cheats/timer_key_from_memory.py",
        "passed",
        no_gain=True,
        log_has=("ARENA_TIMER_KEY_FOUND", "ARENA_ENGINE_SEALED"),
        fills=(("ARENA_TEST_HOLD_S", "0.25"), ("ARENA_TEST_CLAIM", "0.8")),
    ),
    Case(
        "cheats/timer_key_from_memory.py",
        "passed",
        no_gain=True,
        log_has=("ARENA_TIMER_KEY_FOUND", "ARENA_ENGINE_SEALED"),
        fills=(("ARENA_TEST_HOLD_S", "0"), ("ARENA_TEST_CLAIM", "0.8")),
        label="timer_key_small_forgery",
    ),
    Case(
        "cheats/timer_key_from_memory.py",
        "passed",
        no_gain=True,
        log_has=("ARENA_TIMER_KEY_FOUND", "ARENA_ENGINE_SEALED"),
        fills=(("ARENA_TEST_HOLD_S", "0"), ("ARENA_TEST_CLAIM", "0")),
        label="timer_key_zero_sample",
    ),
    # The same fifth hidden by a forger that learns the windows and re-points the engine's timer descriptor at
    # /dev/null, writing one keyed sample of its own per window: the table holding the descriptor is sealed.
    Case(
        "cheats/timer_key_forged_windows.py",
        "passed",
        no_gain=True,
        log_has=("ARENA_TIMER_KEY_FOUND", "ARENA_ENGINE_SEALED"),
        fills=(("ARENA_TEST_CLAIM", "0.8"), ("ARENA_TEST_WARMUP", "3")),
        params=(("numel", 1024),),
    ),
    # A wrong solution shrinking its feed slot under the judge's mapping (the judge's next write died of SIGBUS: the
    # platform's failure, retried) gets its own verdict.
    Case("cheats/shrink_feed_slot.py", "wrong_output", ("differ",)),
    # Ending the process, crashing, hanging.
    Case("cheats/early_exit_sys_exit.py", "rejected", ("before the evaluation finished",)),
    Case("cheats/early_exit_os_exit.py", "rejected", ("before the evaluation finished",)),
    Case("cheats/hang_one_rank.py", "timeout", ("correctness phase passed its limit",), timeouts=HANG_TIMEOUTS),
    Case("cheats/crash_one_rank.py", "runtime_error", ("rank 1 died (signal SIGSEGV)",)),
    # Containment: the honest computation passes, and nothing reached the host.
    Case("cheats/write_outside_workdir.py", "passed", outside=_FILES),
    Case("cheats/torch_save_outside.py", "passed", outside=_FILES),
    Case("cheats/network_connection.py", "passed", listen=True),
    Case("cheats/tcpstore_other_address.py", "passed", listen=True),
    Case("cheats/read_other_submission.py", "passed", decoy=True, log_has=("stolen: {}",)),
    Case("cheats/print_mount_table.py", "passed", log_has=("ARENA_MOUNTS",), host_paths_free=True),
    # The log's folder is the host's: the log cannot be removed, so no link takes its place.
    Case("cheats/log_symlink_host_file.py", "runtime_error", ("PermissionError",), decoy=True),
    Case("cheats/from_file_other_eval.py", "passed", decoy=True, log_has=("read: []",)),
    Case("cheats/proc_memory_seeds.py", "wrong_output", ("differ",), secret_free=True, log_has=("0 secrets",)),
    Case("cheats/load_reference_by_path.py", "wrong_output", ("differ",), log_has=("ARENA_REFERENCE_VISIBLE 0",)),
    Case("cheats/read_other_rank_io.py", "wrong_output", ("differ",), log_has=("ARENA_OTHER_INPUTS_MISSING",)),
    Case(
        "cheats/read_peer_feed_slot.py",
        "passed",
        log_has=("ARENA_PEER_FEED_UNREADABLE",),
        log_lacks=("ARENA_PEER_FEED_READ",),
    ),
    # Rules on the process environment, threads and processes.
    Case("cheats/multicast_env.py", "rejected", ("NCCL_NVLS_ENABLE",)),
    Case("cheats/report_channel_takeover.py", "rejected", ("re-point the evaluator's report",)),
    Case("cheats/report_channel_swap_thread.py", "rejected", ("channel lock ended it",)),
    Case("cheats/seccomp_listener.py", "rejected", ("channel lock ended it",)),
    Case(
        "cheats/feed_private_remap.py",
        "rejected",
        ("a private mapping of its feed slot", "feed slot still held the inputs of its last call"),
        log_has=("ARENA_FEED_REMAPPED",),
    ),
    Case(
        "cheats/serve_from_inside_call.py",
        "rejected",
        ("called the evaluator's engine from inside its own call",),
        log_lacks=("ARENA_SERVE_HIJACK_STARTED",),
    ),
    # Its copier thread is named like gloo's: refused for the Python code on its stack when a stop finds it there,
    # else for its late write (the frame's digest).
    Case(
        "cheats/slot_write_after_reply.py",
        "rejected",
        ("output slot changed after the rank replied", "named like a library's thread, with Python code"),
    ),
    Case("cheats/libc_setenv_multicast.py", "rejected", ("NCCL_NVLS_ENABLE",)),
    Case("cheats/background_thread.py", "rejected", ("thread(s) the solution started", "arena_solution._toggle")),
    Case("cheats/start_new_thread.py", "rejected", ("thread(s) the solution started",)),
    Case("cheats/pool_not_shut_down.py", "rejected", ("thread(s) the solution started", "ThreadPoolExecutor")),
    Case("cheats/partial_thread.py", "rejected", ("thread(s) the solution started",)),
    # Refused either way: for its work while the host waited for it to leave, or, on a slow host, for still running.
    Case(
        "cheats/work_while_leaving.py",
        "rejected",
        ("while the host waited for it to end", "thread(s) the solution started were still running"),
    ),
    Case("cheats/helper_process.py", "rejected", ("a process other than the ranks",), leaves_no="arena_helper_marker"),
    Case("cheats/escape_daemon.py", "rejected", ("a process other than the ranks",), leaves_no="arena_escape_marker"),
    Case("cheats/orphan_like_the_spawner.py", "rejected", ("a process other than the ranks",)),
    Case(
        "cheats/helper_named_as_compiler.py",
        "rejected",
        ("a process other than the ranks",),
        leaves_no="arena_disguised_helper",
    ),
    Case(
        "cheats/helper_named_bwrap.py",
        "rejected",
        ("a process other than the ranks",),
        leaves_no="arena_disguised_helper",
    ),
    Case(
        "cheats/helper_shell_with_preload.py",
        "rejected",
        ("a process other than the ranks",),
        leaves_no="arena_preloaded_shell",
    ),
    # The rank's folder is the host's: not even the tree's first level is made (and its folder is removed: every case
    # checks that).
    Case("cheats/deep_tree_in_exchange.py", "runtime_error", ("PermissionError",)),
    Case("cheats/fill_dev_shm.py", "passed", log_has=("ARENA_SHM_CAPPED",), log_lacks=("ARENA_SHM_UNCAPPED",)),
    Case("cheats/static_forbidden.py", "rejected", ("static check",)),
    Case("cheats/too_fast.py", "rejected", ("physically impossible",), where="cpu", profile=RIGGED_PROFILE),
]

HONEST: list[Case] = [
    Case("honest/reduce_scatter_all_gather.py", "passed"),
    Case("honest/ring_send_recv.py", "passed"),  # point-to-point only
    Case("honest/all_gather_sum.py", "passed"),
    Case("honest/persistent_workspace.py", "passed"),
    Case("honest/side_stream_joined.py", "passed"),
    Case("honest/chunked_async.py", "passed"),
    Case("honest/compiled_copy.py", "passed"),
    Case("honest/inductor_compiled.py", "passed"),
    Case("honest/progress_bar.py", "passed"),  # a library's lazily started thread
    Case("honest/pickled_all_gather_object.py", "passed"),
    Case("honest/torch_save_own_tmp.py", "passed"),
    Case("honest/private_group.py", "passed"),
    Case("honest/mmap_between_ranks.py", "passed", communicates=False),
    Case("honest/thread_joined.py", "passed"),
    Case("honest/intra_op_threads.py", "passed"),
    Case("honest/non_contiguous_output.py", "passed"),
    Case("honest/functional_collectives.py", "passed"),
    Case("honest/lazy_workspace.py", "passed"),
    Case("honest/list_output.py", "passed", problem="data-parallel/grad_norm_clip"),
    Case(
        "honest/cpp_load_inline.py",
        "passed",
        slow=True,
        timeouts={"setup": 400.0, "correctness": 60.0, "timing": 120.0},
    ),
    Case("honest/triton_copy.py", "passed", where="gpu"),
    Case("../../benchmarks/solutions/symm_mem_one_shot_all_reduce.py", "passed", where="gpu"),
]


def _iterations(gpu: bool, timing_matters: bool = False) -> tuple[int, int]:
    # A median of 10 paired ratios of CPU all-reduces (0.3-7 ms each on two shared cores) ranges 0.5-3.2 for
    # identical code; of 30, 1.0-1.3. The cases whose point is the figure get the 30.
    if gpu:
        return 20, 3
    return (30, 1) if timing_matters else (10, 1)


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses other than loopback (what a sandboxed process might try to reach it by)."""
    found = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(info[4][0])
    except OSError:
        pass
    return sorted(a for a in found if not a.startswith("127."))


class Listener:
    """A TCP port on every address of the host; counts the connections that arrive."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> int:
        self._stop = True
        self._thread.join(2)
        self.sock.close()
        return self.connections


def spec_for(case: Case, profile: str, gpu: bool, source: str | None = None) -> EvalSpec:
    path = (HERE / case.file).resolve()
    iterations, warmup = _iterations(gpu, case.no_gain)
    # Timing is not the point of most cases: few iterations, two trials, generous limits except for the hang.
    timeouts = case.timeouts or {"setup": 240.0 if gpu else 90.0, "correctness": 60.0, "timing": 120.0}
    return EvalSpec(
        problem_id=case.problem,
        solution_source=source if source is not None else path.read_text(),
        profile=profile,
        solution_name=path.name,
        trials=TRIALS,
        timing_iterations=iterations,
        warmup_iterations=warmup,
        timeouts=timeouts,
        seed=SEED if case.secret_free else None,
        params=dict(case.params) or None,
    )


def make_decoy(parent: Path, token: str) -> Path:
    decoy = Path(tempfile.mkdtemp(prefix="arena-eval-", dir=parent))
    (decoy / "solution").mkdir()
    (decoy / "solution" / "solution.py").write_text(f"SECRET = '{token}'\n")
    os.chmod(decoy, 0o755)
    return decoy


def surviving(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "pytest" not in cmd:
                found.append(f"{pid}: {cmd[:120]}")
    return found


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def run_case(case: Case, profile: str, gpu: bool, workdir_parent: Path) -> tuple[dict[str, Any], float]:
    """Evaluates one case; returns the result document (with what the test observed on the host under
    ``observed``) and the wall time."""
    token = f"arena-decoy-{secrets.token_hex(8)}"
    decoy = make_decoy(workdir_parent, token) if case.decoy else None
    listener = Listener() if case.listen else None
    where = str(decoy or "/nonexistent-decoy")
    values = {
        "ARENA_TEST_DECOY_HEX": where.encode().hex(),
        "ARENA_TEST_DECOY": where,
        "ARENA_TEST_REPO": str(REPO),
        "ARENA_TEST_PARENT": str(workdir_parent),
        "ARENA_TEST_PORT": str(listener.port if listener else 9),
        "ARENA_TEST_ADDRS": ",".join(host_addresses()),
        **dict(case.fills),
    }
    outside = [Path(_fill(p, values)) for p in case.outside]
    for p in outside:
        p.unlink(missing_ok=True)  # only the cheats' own marker names are listed
    source = _fill((HERE / case.file).resolve().read_text(), values)
    spec = spec_for(case, profile, gpu, source)
    started = time.monotonic()
    try:
        doc = evaluate(spec, workdir_parent=str(workdir_parent))
    finally:
        connections = listener.close() if listener else 0
    wall = time.monotonic() - started
    observed: dict[str, Any] = {"connections": connections, "outside_files": [str(p) for p in outside if p.exists()]}
    text = json.dumps(doc, default=str)
    if decoy is not None:
        observed["decoy_leaked"] = token in text
    if case.secret_free:
        iterations, warmup = spec.timing_iterations or 0, spec.warmup_iterations or 0
        drawn = _secrets(spec, warmup, iterations)
        numbers = [drawn["warm"], drawn["positions"], *drawn["trials"], *drawn["timing"]]
        observed["secrets_leaked"] = [n for n in numbers if str(n) in text]
    if case.host_paths_free:
        from evaluator.host.evaluate import _cache_root

        observed["host_paths_leaked"] = [p for p in (str(workdir_parent), str(_cache_root())) if p in text]
    for p in outside:
        p.unlink(missing_ok=True)
    doc["observed"] = observed
    return doc, wall


def problems_with(case: Case, doc: dict[str, Any]) -> list[str]:
    """What is wrong with a case's result, in words (empty: as expected)."""
    out = []
    logs = "\n".join((doc.get("logs") or {}).values())
    lost_race = case.loses_race and doc["verdict"] == "passed" and "ARENA_RT_ABSENT" in logs
    if doc["verdict"] != case.expected and not lost_race:
        out.append(f"expected {case.expected}, got {doc['verdict']}: {doc['message']}")
    elif case.says and not lost_race and not any(s in doc["message"] for s in case.says):
        out.append(f"the message does not name the reason ({' / '.join(case.says)}): {doc['message']}")
    if (
        (case.no_gain or lost_race)
        and doc["verdict"] == "passed"
        and (doc.get("timing") or {}).get("speedup", 0) >= (case.gain_below or NO_GAIN)
    ):
        out.append(f"the cheat gained: {doc['timing']['speedup']:.2f}× the baseline")
    if case.leaves_no and surviving(case.leaves_no):
        out.append(f"processes survived the evaluation: {surviving(case.leaves_no)}")
    if (doc.get("containment") or {}).get("leftover_processes"):
        out.append(f"processes were left in the sandbox: {doc['containment']['leftover_processes']}")
    seen = doc.get("observed") or {}
    if seen.get("outside_files"):
        out.append(f"files escaped onto the host: {seen['outside_files']}")
    if seen.get("connections"):
        out.append(f"{seen['connections']} connection(s) reached the host's listener")
    if seen.get("decoy_leaked"):
        out.append("another evaluation's solution appears in the result")
    if seen.get("secrets_leaked"):
        out.append(f"the judge's secrets appear in the result: {seen['secrets_leaked'][:3]}")
    if seen.get("host_paths_leaked"):
        out.append(f"host paths appear in the result: {seen['host_paths_leaked']}")
    if "static check" not in doc["message"]:
        out += [f"the cheat's log does not say {needle!r}" for needle in case.log_has if needle not in logs]
        out += [
            f"the cheat found what it looked for ({needle!r} in its log)" for needle in case.log_lacks if needle in logs
        ]
    return out


def _summary(doc: dict[str, Any]) -> str:
    logs = "\n".join(f"--- {k}\n{v[-1500:]}" for k, v in (doc.get("logs") or {}).items())
    return f"{doc['verdict']}: {doc['message']}\nobserved: {doc.get('observed')}\n{logs}"


@pytest.fixture
def rigged_profile(monkeypatch):
    base = PROFILES["cpu-gloo-2"]
    monkeypatch.setitem(PROFILES, RIGGED_PROFILE, dataclasses.replace(base, name=RIGGED_PROFILE, link_gbps=1e-5))


@pytest.mark.parametrize("case", CHEATS, ids=lambda c: c.name)
def test_cheat_gets_its_verdict(case: Case, tmp_path: Path, request) -> None:
    if case.where == "gpu":
        pytest.skip("needs CUDA: run benchmarks/cheat_suite.py on a GPU host")
    if case.profile:
        request.getfixturevalue("rigged_profile")
    if case.known_open:
        # Not strict: on shared CPUs the forged gain itself is noisy, so an open hole can now and then look closed.
        request.applymarker(pytest.mark.xfail(reason=case.known_open, strict=False))
    os.chmod(tmp_path, 0o755)
    doc, _ = run_case(case, case.profile or "cpu-gloo-2", False, tmp_path)
    assert not problems_with(case, doc), _summary(doc)
    assert not list(tmp_path.glob("arena-eval-*/io")), "the working directory was left behind"


@pytest.mark.parametrize("case", HONEST, ids=lambda c: c.name)
def test_honest_solution_passes(case: Case, tmp_path: Path) -> None:
    if case.where == "gpu":
        pytest.skip("needs CUDA: run benchmarks/cheat_suite.py on a GPU host")
    if case.slow and not SLOW:
        pytest.skip("a slow build: set ARENA_SLOW_TESTS=1 (benchmarks/cheat_suite.py runs it too)")
    doc, _ = run_case(case, "cpu-gloo-2", False, tmp_path)
    assert doc["verdict"] == "passed", _summary(doc)
    assert doc["static_checks"]["refusals"] == []
    if case.communicates:
        assert doc["flags"]["uses_nccl"], doc["flags"]
    iterations, _ = _iterations(False)
    assert doc["timing"]["rechecked_outputs"] == 2 * iterations  # every timed output on both ranks was checked
    assert not problems_with(case, doc), _summary(doc)


def test_every_cheat_and_honest_file_is_in_the_table() -> None:
    listed = {(HERE / c.file).resolve() for c in CHEATS + HONEST}
    on_disk = set(CHEATS_DIR.glob("*.py")) | set(HONEST_DIR.glob("*.py"))
    assert on_disk <= listed, sorted(str(p.name) for p in on_disk - listed)
    assert len([c for c in CHEATS if c.where != "cpu"]) >= 15 and len(HONEST) >= 10
    for c in CHEATS:
        doc = (HERE / c.file).read_text().split('"""')
        assert len(doc) >= 3 and doc[1].strip(), f"{c.file} has no docstring saying what it tries"


def test_a_race_the_cheat_lost_counts_its_gain_not_its_verdict() -> None:
    case = next(c for c in CHEATS if c.name == "gate_forge_armed_with_hog")
    refused = {"verdict": "rejected", "message": "the gate was armed by something other than the call's stream"}
    assert not problems_with(case, refused)
    honest = {"verdict": "passed", "message": "correct", "timing": {"speedup": 0.98}}
    lost = {**honest, "logs": {"rank0": "ARENA_RT_ABSENT forge_armed_with_hog: armed forged 0/8\n"}}
    assert not problems_with(case, lost)
    # A pass is only a lost race where the cheat says so, and it may not gain.
    assert problems_with(case, honest)
    assert problems_with(case, {**lost, "timing": {"speedup": 1.6}})
    assert problems_with(case, {**lost, "logs": {"rank0": "ARENA_RT_ABSENT\nARENA_RT_FOUND forge\n"}})
    # A case that cannot lose a race keeps its one verdict.
    strict = next(c for c in CHEATS if c.name == "gate_token_next_call")
    assert problems_with(strict, refused)
