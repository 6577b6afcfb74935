"""The one check that a file is a solution, as single uploads, model runs and imported suites all apply it."""

import pytest

from evaluator.contract.source import solution_problem


@pytest.mark.parametrize(
    "source",
    [
        "def solution(x):\n    return x\n",
        "def _impl(x):\n    return x\nsolution = _impl\n",
        "from functools import partial\nsolution: object = partial(max)\n",
        "from math import fsum as solution\n",
        "class solution:\n    def __new__(cls, x):\n        return x\n",
        "\ufeffdef solution(x):\n    return x\n",
    ],
)
def test_every_way_of_binding_solution_is_accepted(source):
    assert solution_problem(source) is None


@pytest.mark.parametrize(
    "source, words",
    [
        ("", "empty"),
        ("def other(x):\n    return x\n", "defines no top-level `solution`"),
        ("def f():\n    solution = 1\n", "defines no top-level `solution`"),
        ("def solution(x)\n    return x\n", "not valid Python"),
        ("async def solution(x):\n    return x\n", "async"),
        ("x = 1\n\0", "NUL byte at line 2"),
        ("solution: int\n", "defines no top-level `solution`"),
    ],
)
def test_non_solutions_are_refused_with_a_message_that_says_what_to_do(source, words):
    message = solution_problem(source, where="attempt.py")
    assert message and words in message and message.startswith("attempt.py")
