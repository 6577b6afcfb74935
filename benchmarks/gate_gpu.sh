#!/usr/bin/env bash
# Every figure the gated inputs (timing protocol revision 15) still owe, on one GPU, in one command, each step under
# a time limit of its own so that one that hangs leaves the others' figures:
#
#   benchmarks/gate_gpu.sh OUTDIR [STEP ...]       (STEP: tests identical cheats tp_mlp; all four by default)
#
# about 10 minutes in all on one H100, so a device that limits one command to less takes it in two (say "tests
# identical", then "cheats tp_mlp"). The profile is ARENA_GPU_PROFILE's (default h200-smoke-1). The steps:
#   1. the device feed's GPU tests (tests/evaluator/host/test_device_feed.py: "gated", and a full wait at the gate);
#   2. identical code (the reference as the solution), five warm evaluations each: the bench all-reduce and three
#      problems with real GPU work;
#   3. the red team's gate_* cheats and side_stream_under_spin, as the cheat table expects them;
#   4. tp_mlp at bench size, two warm evaluations (the set-up, each phase, the host's loop an iteration).
#
# OUTDIR/summary_<steps>.md gathers each step's exit status and the lines that carry its figures; each step's whole
# output (<step>.log) and the benchmarks' own JSON files are packed in OUTDIR/gate_gpu_<steps>.tar.gz: two files to
# bring back. The NVLink multicast switches stay off.
set -uo pipefail
out=${1:?usage: benchmarks/gate_gpu.sh OUTDIR [tests] [identical] [cheats] [tp_mlp]}
shift
steps=" ${*:-tests identical cheats tp_mlp} "
tag=$(echo $steps | tr ' ' _)
profile=${ARENA_GPU_PROFILE:-h200-smoke-1}
cd "$(dirname "$0")/.."
work=$(mktemp -d)  # outside OUTDIR: only the summary and the pack are brought back
mkdir -p "$work"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python=${PYTHON:-python}
summary="$out/summary_$tag.md"
echo "# Gated inputs on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%FT%TZ)" >"$summary"

step() {  # step NAME LIMIT_S COMMAND...: runs COMMAND under LIMIT_S, logs it, and notes its status and figures
  local name=$1 limit=$2
  shift 2
  local began=$SECONDS
  timeout --kill-after=20 "$limit" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  {
    echo
    echo "## $name: exit $rc after $((SECONDS - began)) s"
    echo '```'
    echo "$*"
    grep -E "passed|failed|skipped|speedup|median|warm|cold|verdict|gate|PASS|FAIL|Error" "$work/$name.log" | tail -25
    echo '```'
  } >>"$summary"
  # Packed after every step, so that a command stopped at its limit still brings back the steps it finished.
  tar czf "$out/gate_gpu_$tag.tar.gz" -C "$work" .
}

wanted() { [[ $steps == *" $1 "* ]]; }

# --noconftest: GPU hosts bring torch, not the portal's Django, which tests/conftest.py sets up; these tests need none.
wanted tests && step gpu_tests 400 "$python" -m pytest -q -p no:cacheprovider --noconftest \
  tests/evaluator/host/test_device_feed.py
# GATE_PROBLEMS narrows step 2 to some of them (a device that lends less time than the whole takes).
problems=${GATE_PROBLEMS:-collectives/all_reduce tensor-parallel/gemm_all_reduce tensor-parallel/all_gather_matmul \
tensor-parallel/gemm_reduce_scatter}
wanted identical && for problem in $problems; do
  step "identical_${problem//\//_}" 300 "$python" benchmarks/eval_wall.py "$work/wall_${problem//\//_}" \
    --profile "$profile" --problem "$problem" --solution reference --runs 5 --warm-sandboxes --between-s 3
done
wanted cheats && step cheats 500 "$python" benchmarks/cheat_suite.py "$work/cheats" --profile "$profile" --only \
  gate_unrelease_race,gate_forge_armed_with_hog,gate_poll_as_they_land,gate_token_next_call,gate_armed_event_rerecord,side_stream_under_spin
wanted tp_mlp && step tp_mlp 400 "$python" benchmarks/eval_wall.py "$work/wall_tp_mlp" --profile "$profile" \
  --problem tensor-parallel/tp_mlp --runs 2 --warm-sandboxes --between-s 3
rm -rf "$work"
cat "$summary"
