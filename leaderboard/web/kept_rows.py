"""Rows of a table kept once built, per process (``rankings/memo.py``), keyed by everything a row is built from: the
render after one result rebuilds the row that changed and reuses every other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import translation
from django.utils.timezone import get_current_timezone_name

from leaderboard.rankings.memo import Memo

# A table's row, built once per process for the same inputs (``rankings/memo.py``): after a result lands, a ranking's
# next render rebuilds the row that changed and reuses every other. About 1.5 KB a row.
ROWS = Memo(4096)


def page_inputs(*parts: Any) -> tuple[Any, ...]:
    """What the rows of one table on a page depend on beyond each row (``parts``: the function that builds them and
    its other arguments), with the time zone dates are written in and the language numbers are localized in."""
    return (*parts, get_current_timezone_name(), translation.get_language())


def kept_row(build: Callable[..., str], row: Any, key: Any, page: tuple[Any, ...], *args: Any) -> str:
    """``build(row, *args)``, from ``ROWS`` when a row of the same ``key`` (everything ``build`` reads of the row,
    hashable; None: built every time) was built on a page of the same inputs (``page``: ``page_inputs``, naming
    ``build`` and ``args``)."""
    return ROWS.get_or_build(None if key is None else (page, key), lambda: build(row, *args))


def problem_key(problem: Any, lead: Any) -> Any:
    """What a problem's row of the catalogue is built from: the problem as listed (``ListedProblem.read``) and its
    leader's line (a frozen dataclass, or None); None for a problem that does not say how it was read (a model
    instance)."""
    read = getattr(problem, "read", None)
    return None if read is None else (read, lead)


def run_key(run: Any) -> Any:
    """What a run's row is built from: the run as read (``RunRow.read``) and its rank range; None for a run that
    does not say how it was read (a model instance)."""
    read = getattr(run, "read", None)
    return None if read is None else (read, getattr(run, "rank_range", None))
