"""The SQL of the ranking's queries, compiled once per process for each state of what they are built from.

Compiling a filtered, sorted queryset of runs costs Django a third to half a millisecond of CPU (joins, ordering
expressions), and a page of the ranking compiles four of them: about a tenth of the page. What they are built from is
the request's valid filter values, sort and page, never the data, so the text and parameters compiled for one state
serve every later request in that state. The key a caller gives must name **everything** the queryset is built from
besides the code (``run_selectors.ranking_key``); the slice and the database alias are added here.

Not a row memo (``memo.py``): nothing here depends on the data, so a benchmark that drops every row kept
(``forget_all``) leaves these.

``rows`` goes one step further for the small fixed reads of a page (a problem's standings, its baseline, which of a
page's submissions are published): the queryset itself is built only the first time its key is seen (building
filters through joins cost as much as compiling them), and its rows come back as iterating it gives them, each column
through the converters Django would apply. Its key names the values the query is built from too (a problem's id, a
profile): one state per problem and profile read, each compiled once.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)

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
    return _kept((key, query.low_mark, query.high_mark, queryset.db), lambda: queryset)


def sql_of(key: Hashable, build: Callable[[], QuerySet]) -> tuple[str, tuple[Any, ...]]:
    """``sql_with_params(build(), key)`` with ``build`` called, and its query compiled, only the first time ``key`` is
    seen on this database (for a query whose building costs as much as its compiling: a window, joins). ``key`` must
    name everything ``build`` builds the query from, the values it filters by included. Raises ``EmptyResultSet`` as
    compiling it does."""
    return _kept(("sql_of", key, connection.alias), build)


def _kept(full: Hashable, build: Callable[[], QuerySet]) -> tuple[str, tuple[Any, ...]]:
    """The SQL kept under ``full``, compiled from ``build()`` the first time; raises ``EmptyResultSet`` for a query
    that can match nothing, every time."""
    found = _compiled.get(full)
    if found is None:
        try:
            found = _compile(build())
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


# A read's SQL, parameters, number of columns and the converters of its columns (position, converters, expression).
_Read = tuple[str, tuple[Any, ...], int, tuple[tuple[int, tuple[Any, ...], Any], ...]]
_reads: dict[Hashable, _Read | None] = {}
_UNREAD: Any = object()  # (a key not compiled yet; None is kept for a query that can match nothing)


def rows(key: Hashable | None, build: Callable[[], QuerySet]) -> list[tuple[Any, ...]]:
    """The rows of ``build()``, a ``values_list()`` of plain fields (no annotation, not flat, not named), as
    iterating it gives them, on the default database: ``build`` is called, and its query compiled, once per process
    for ``key``, which must name **everything** ``build`` builds the query from (the values it filters by included);
    each later call runs the SQL kept and applies the same converters to the same columns (``key`` None: built and
    compiled every time, nothing kept)."""
    full = ("rows", key, connection.alias)
    found = _reads.get(full, _UNREAD) if key is not None else _UNREAD  # (key None: compiled every time, not kept)
    if found is _UNREAD:
        found = _prepare(build())
        if key is None:
            return _run(found)
        with _lock:
            if len(_reads) >= LIMIT:
                _reads.clear()
            _reads[full] = found
    return _run(found)


def _run(found: _Read | None) -> list[tuple[Any, ...]]:
    if found is None:  # a query that can match nothing
        return []
    sql, params, width, converters = found
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        read = cursor.fetchall()
    if not converters:
        return [tuple(row[:width]) for row in read]
    out = []
    for values in read:
        row = list(values[:width])
        for at, convert, expression in converters:
            value = row[at]
            for converter in convert:
                value = converter(value, expression, connection)
            row[at] = value
        out.append(tuple(row))
    return out


def rows_of(queryset: QuerySet, key: Hashable | None) -> list[tuple[Any, ...]]:
    """``rows`` of a queryset built already (a ``values_list()`` of plain fields, perhaps sliced): only its compiling
    is saved, once per process for ``key`` and its slice (``key`` None: compiled every time)."""
    query = queryset.query
    return rows(None if key is None else ("of", key, query.low_mark, query.high_mark), lambda: queryset)


def first(key: Hashable, build: Callable[[], QuerySet]) -> tuple[Any, ...] | None:
    """``build().first()`` through ``rows``: the first row in the queryset's order, else by primary key (None: no
    row)."""

    def first_only() -> QuerySet:
        found = build()
        return (found if found.ordered else found.order_by("pk"))[:1]

    found = rows(("first", key), first_only)
    return found[0] if found else None


def get(model: type[M], **lookups: Hashable) -> M | None:
    """``model.objects.get(**lookups)`` (None where no row matches) read through ``rows``: the query of every
    field compiled once per process for the same lookups, the row made an instance as a queryset makes it."""
    names = [field.attname for field in model._meta.concrete_fields]
    found = rows(  # (two rows read: a second says several match)
        ("get", model._meta.label_lower, tuple(sorted(lookups.items()))),
        lambda: model._default_manager.filter(**lookups).order_by().values_list(*names)[:2],
    )
    if len(found) > 1:
        raise model.MultipleObjectsReturned(  # type: ignore[attr-defined]
            f"get() returned more than one {model._meta.object_name}"
        )
    return model.from_db(connection.alias, names, found[0]) if found else None


def _prepare(queryset: QuerySet) -> _Read | None:
    query = queryset.query
    if (
        query.annotations
        or query.extra
        or not queryset._fields
        or queryset._iterable_class.__name__ != ("ValuesListIterable")
    ):
        raise ValueError("prepared.rows reads a values_list() of plain fields")
    compiler = query.get_compiler(using=connection.alias)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return None
    columns = [selected[0] for selected in compiler.select[0 : compiler.col_count]]
    converters = tuple(
        (at, tuple(convert), expression) for at, (convert, expression) in compiler.get_converters(columns).items()
    )
    return sql, tuple(params), compiler.col_count, converters  # (columns past these: an ordering's own)


def forget() -> None:
    """Drops every compiled query (a test that changes what one is built from)."""
    with _lock:
        _compiled.clear()
        _reads.clear()
