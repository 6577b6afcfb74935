"""The SQL of the ranking's queries, compiled once per process for each state of what they are built from.

Compiling a filtered, sorted queryset of runs costs Django a third to half a millisecond of CPU (joins, ordering
expressions), and a page of the ranking compiles four of them: about a tenth of the page. What they are built from is
the request's valid filter values, sort and page, never the data, so the text and parameters compiled for one state
serve every later request in that state. The key a caller gives must name **everything** the queryset is built from
besides the code (``run_selectors.ranking_key``); the slice and the database alias are added here.

Not a row memo (``memo.py``): nothing here depends on the data, so a benchmark that drops every row kept
(``forget_all``) leaves these.
"""

from __future__ import annotations

import threading
from typing import Any, Hashable

from django.core.exceptions import EmptyResultSet
from django.db.models import QuerySet

LIMIT = 1024  # states kept; then forgotten all at once (a few hundred bytes of SQL each)

_EMPTY = ("", ())  # a query that can match nothing (Django raises EmptyResultSet when compiling it)
_compiled: dict[Hashable, tuple[str, tuple[Any, ...]]] = {}
_lock = threading.Lock()


def sql_with_params(queryset: QuerySet, key: Hashable | None) -> tuple[str, tuple[Any, ...]]:
    """``queryset.query.sql_with_params()``, compiled once per process for ``key`` and ``queryset``'s slice and
    database (``key`` None: compiled every time). Raises ``EmptyResultSet`` as compiling it does."""
    if key is None:
        return _compile(queryset)
    query = queryset.query
    full = (key, query.low_mark, query.high_mark, queryset.db)
    found = _compiled.get(full)
    if found is None:
        try:
            found = _compile(queryset)
        except EmptyResultSet:
            found = _EMPTY
        with _lock:
            if len(_compiled) >= LIMIT:
                _compiled.clear()
            _compiled[full] = found
    if found is _EMPTY:
        raise EmptyResultSet
    return found


def _compile(queryset: QuerySet) -> tuple[str, tuple[Any, ...]]:
    sql, params = queryset.query.sql_with_params()
    return sql, tuple(params)


def forget() -> None:
    """Drops every compiled query (a test that changes what one is built from)."""
    with _lock:
        _compiled.clear()
