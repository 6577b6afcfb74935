"""One check that a file defines ``solution`` (evaluator.contract.source), the same for a single upload and for a
model run's attempt: what one accepts the other accepts, and what one refuses the other refuses with the same words."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from leaderboard.model_runs.services import model_run_create
from leaderboard.model_runs.writer import build_archive
from leaderboard.models import ModelRun, Submission
from leaderboard.submissions.services import submission_create
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE

BOUND_BY_ASSIGNMENT = (
    "import torch\nimport torch.distributed as dist\n\n\n"
    "def _impl(x):\n    out = x.clone()\n    dist.all_reduce(out)\n    return out\n\n\n"
    "solution = _impl\n"
)
NO_SOLUTION = "import torch\n\n\ndef solve(x):\n    return x\n"
REFUSAL = "defines no top-level `solution`. A solution file must define `def solution(...)`"
K1 = dict(fx.MANIFEST, k=1)


def _upload(user, source: str) -> Submission:
    return submission_create(user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=source)


def _run(user, source: str) -> ModelRun:
    return model_run_create(user=user, filename="run.zip", data=build_archive(K1, {(ALL_REDUCE, 1): source}))


def test_solution_bound_by_assignment_is_accepted_as_an_upload_and_as_a_model_run_attempt(problems, user):
    assert _upload(user, BOUND_BY_ASSIGNMENT).source == BOUND_BY_ASSIGNMENT
    run = _run(user, BOUND_BY_ASSIGNMENT)
    assert [a.source for a in run.attempts.all()] == [BOUND_BY_ASSIGNMENT]


def test_a_file_without_solution_is_refused_the_same_way_in_both(problems, user):
    with pytest.raises(ValidationError) as single:
        _upload(user, NO_SOLUTION)
    with pytest.raises(ValidationError) as attempt:
        _run(user, NO_SOLUTION)
    (single_message,) = single.value.message_dict["source"]
    (attempt_message,) = attempt.value.message_dict["archive"]
    assert single_message == f"The file {REFUSAL}" + single_message.split(REFUSAL, 1)[1]
    assert attempt_message.startswith(f"attempts/{ALL_REDUCE}/attempt_1.py {REFUSAL}")
    assert attempt_message.split(REFUSAL, 1)[1] == single_message.split(REFUSAL, 1)[1]
    assert Submission.objects.count() == 0 and ModelRun.objects.count() == 0
