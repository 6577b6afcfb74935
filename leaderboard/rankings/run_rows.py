"""A page of model runs read as plain rows (``.values()``) instead of model instances.

A ranking page, its exports, the API's ranking and a user's page read a run, its owner's name and its stored score:
building three model instances a row (the run, its RunScore and its owner) cost a page of 100 runs about a quarter of
its CPU. ``RunRow`` carries the same attributes those tables, serializers and rows of HTML read (``pk``, the run's
columns, ``user.username``, ``score.<field>``, ``is_done``), with the same values
(``tests/leaderboard/rankings/test_run_rows.py`` holds them to the model instances).
"""

from __future__ import annotations

from typing import Any, Iterable

from django.db.models import QuerySet

from evaluator.contract import states
from leaderboard.models import ModelRun

# The run's own columns a table of runs reads (its manifest and notes, big and never shown, are left out).
RUN_FIELDS = (
    "id",
    "user_id",
    "model",
    "provider",
    "mode",
    "k",
    "turn_budget",
    "tokens",
    "wall_time_s",
    "profile",
    "precision",
    "suite",
    "suite_version",
    "run_date",
    "open_weights",
    "archive_name",
    "archive_sha256",
    "is_demo",
    "published_at",
    "state",
    "attempts_total",
    "attempts_done",
    "created_at",
    "finished_at",
    "score_stale_since",
)
# The stored score's columns (its per-category breakdown and whole detail, big JSON, are left out).
SCORE_FIELDS = (
    "k",
    "pass_at_1",
    "pass_at_k",
    "fast_1_at_k",
    "fast_1_5_at_k",
    "fast_2_at_k",
    "geomean_speedup",
    "mean_roofline_fraction",
    "problems_scored",
    "problems_not_scorable",
    "problems_not_attempted",
    "coverage",
    "correct_attempts",
    "pass_at_k_low",
    "pass_at_k_high",
    "fast_1_low",
    "fast_1_high",
    "fast_1_5_low",
    "fast_1_5_high",
    "fast_2_low",
    "fast_2_high",
    "geomean_low",
    "geomean_high",
    "status",
    "timed",
    "protocol_revision",
    "updated_at",
)
_COLUMNS = (*RUN_FIELDS, "user__username", *(f"score__{name}" for name in SCORE_FIELDS))
_OWNER, _SCORE = len(RUN_FIELDS), len(RUN_FIELDS) + 1  # where the owner's name and the score's columns are
assert SCORE_FIELDS[0] == "k"


class Owner:
    """A run's owner as the tables read it: the name."""

    __slots__ = ("pk", "id", "username")

    def __init__(self, pk: int, username: str) -> None:
        self.pk = self.id = pk
        self.username = username

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


class Score:
    """A run's stored score (``RunScore``'s columns but the big JSON ones)."""

    def __init__(self, model_run_id: int, values: dict[str, Any]) -> None:
        self.model_run_id = self.pk = model_run_id
        self.__dict__.update(values)


class RunRow:
    """One model run of a table: its columns as attributes, ``user``, ``score`` (None when it has no RunScore row),
    ``pk`` and ``is_done``, as a ``ModelRun`` with its score and owner gives them."""

    score: Score | None
    rank_range: tuple[int, int] | None

    def __init__(self, values: tuple[Any, ...]) -> None:
        """``values``: the columns of ``_COLUMNS``, in that order."""
        mine = self.__dict__
        mine.update(zip(RUN_FIELDS, values))
        self.pk = mine["id"]
        self.user = Owner(mine["user_id"], values[_OWNER])
        self.score = (
            Score(self.pk, dict(zip(SCORE_FIELDS, values[_SCORE:])))
            if values[_SCORE] is not None  # k, the first, is never null in a stored score: none was joined
            else None
        )

    @property
    def is_done(self) -> bool:
        return states.is_done(self.state)

    def __str__(self) -> str:
        return f"run #{self.pk}: {self.model} ({self.mode}, k={self.k}) on {self.profile}"


def run_rows(runs: QuerySet[ModelRun] | Iterable[Any]) -> list[Any]:
    """The runs of ``runs`` (a queryset, sliced or not, in its order) as ``RunRow``s, in one query; anything else
    (rows already read) as it is."""
    if not isinstance(runs, QuerySet):
        return list(runs)
    return [RunRow(values) for values in runs.values_list(*_COLUMNS)]
