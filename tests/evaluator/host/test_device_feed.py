"""GPU hosts hand each call's inputs over in device memory (the judge's device feed, mapped by the solution's rank):
a large problem's iteration no longer crosses PCIe four times. Skipped where no CUDA device is visible (CI has none);
the figures are in benchmarks/results/ (engine_2026-12-06_h100_device_feed.md)."""

import pytest
import torch

from evaluator.contract.spec import EvalSpec
from evaluator.host.evaluate import evaluate
from problems.registry import get

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _identical(problem_id: str) -> str:
    return get(problem_id).reference_source


def test_a_gpu_evaluation_hands_the_inputs_over_in_device_memory_and_reads_one():
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            profile="h200-smoke-1",
            solution_source=_identical("collectives/all_reduce"),
        )
    )
    assert doc["verdict"] == "passed", doc["message"]
    assert doc["timing"]["input_feed"] == doc["timing"]["output_feed"] == "device"
    # Nothing of a call's inputs was in the rank's process before its stream reached its gate, and every call's
    # stream waited there for the judge's spin.
    assert doc["timing"]["input_staging"] == "gated"
    assert doc["timing"]["gate_wait_us"]["solution"] >= 0.5 * doc["timing"]["spin_us"]
    assert 0.95 <= doc["timing"]["speedup"] <= 1.05


def test_a_gpu_solution_gets_its_inputs_right_through_the_device_feed_in_every_trial():
    """Every trial's outputs are checked in full against the reference's: inputs read from the wrong place, or a
    previous call's, fail them."""
    doc = evaluate(
        EvalSpec(
            problem_id="tensor-parallel/tp_mlp",
            profile="h200-smoke-1",
            solution_source=_identical("tensor-parallel/tp_mlp"),
            # 32 MiB of outputs a call: every frame, timed or not, goes to the judge through the out feed.
            params={"T": 4096, "H": 4096, "F": 1024},
        )
    )
    assert doc["verdict"] == "passed", doc["message"]
    assert len(doc["trials"]) == 5 and all(r["ok"] for t in doc["trials"] for r in t["ranks"])
    assert doc["timing"]["input_feed"] == doc["timing"]["output_feed"] == "device"
    assert doc["timing"]["input_staging"] == "gated"
