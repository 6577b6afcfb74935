from evaluator.contract.build import needs_build
from evaluator.host.prebuild import prebuild
from evaluator.contract.spec import EvalSpec


def test_plain_pytorch_solution_has_nothing_to_build():
    result = prebuild(EvalSpec(problem_id="collectives/all_reduce", solution_source="def solution(x):\n    return x\n"))
    assert result == {"built": False, "reason": "nothing to compile ahead (no load_inline)"}


def test_a_build_that_fails_without_gpu_is_left_to_the_evaluation():
    source = "from torch.utils.cpp_extension import load_inline\nraise RuntimeError('needs a GPU')\n"
    assert needs_build(source)
    result = prebuild(EvalSpec(problem_id="collectives/all_reduce", solution_source=source))
    assert result["built"] is False
    assert "the evaluation will build it" in result["reason"]
    assert "needs a GPU" in result["log"]
