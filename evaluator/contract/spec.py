"""The self-contained description of one evaluation: what an RQ job carries to a worker."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from evaluator.contract.profiles import DEFAULT_PROFILE

DEFAULT_TIMEOUTS = {"setup": 120.0, "correctness": 120.0, "timing": 180.0}


@dataclass(frozen=True)
class EvalSpec:
    problem_id: str
    solution_source: str
    profile: str = DEFAULT_PROFILE
    solution_name: str = "solution.py"
    problem_version: int | None = None  # when set, the worker refuses a problem of another version
    problem_hash: str | None = None
    trials: int = 5
    timing_iterations: int | None = None  # None: the profile's default
    warmup_iterations: int | None = None
    timeouts: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TIMEOUTS))
    measure_timing: bool = True
    seed: int | None = None  # None: drawn by the launcher where the solution cannot see it
    params: dict[str, Any] | None = None  # overrides of the preset's size parameters (size sweeps)
    # Calls wanted in each timed window (evaluator/host/batch.py), for a tighter bound on work hidden outside the
    # timer's samples; the window's data limits and its time budget (batch.within_budget) can cut it, and the result
    # says how many each window held (timing.calls_per_window). For benchmarks: no page or job sets it, since a
    # window's later inputs exist in the rank's memory while its first call runs (docs/threat-model.md).
    min_window_calls: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EvalSpec":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)
