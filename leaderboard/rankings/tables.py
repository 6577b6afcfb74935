"""Sorting, pagination and CSV/JSON export of the site's tables, driven by the query string.

A page declares a :class:`Table` (its columns, how each is read and sorted, its default order) and hands it
the rows a selector returned. ``?sort=<key>`` / ``?sort=-<key>`` orders it on the server, ``?page=N`` pages
it, and ``?format=csv|json`` (with ``&table=<name>`` on pages that show several tables) returns the sorted
table as a file, ``EXPORT_PAGE_ROWS`` rows a page (``?page=``, ``?per_page=`` up to ``MAX_EXPORT_PAGE_ROWS``).
A page with several tables gives each but one a ``prefix`` so their parameters do
not collide (``runs_sort``, ``runs_page``).

Querysets are sorted and sliced by the database (a column's ``order_by``); lists are sorted in Python
(a column's ``get``), missing values last either way.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import quote_plus

from django.core.exceptions import FieldDoesNotExist
from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict

from leaderboard.rankings.export_stream import ExportResponse, KeptRecord, csv_lines, json_lines
from leaderboard.rankings.memo import Memo

EXPORT_FORMATS = ("csv", "json")


# An export is paged like a table, so its cost is bounded whatever the data's size (``?page=``, ``?per_page=``).
EXPORT_PAGE_ROWS = 100


MAX_EXPORT_PAGE_ROWS = 1000


DEFAULT_PER_PAGE = 50


MAX_PER_PAGE = 500


def paginate(
    rows: QuerySet | Sequence[Any], *, number: Any, per_page: int = DEFAULT_PER_PAGE, count: int | None = None
) -> Page:
    """Page ``number`` (1-based; past the end: the last page, not a number: the first) of ``per_page`` rows, at most
    MAX_PER_PAGE: the one way pages and the API page a table. ``count``: the number of rows when the caller counted
    them already (one COUNT query fewer)."""
    paginator = Paginator(rows, min(max(per_page, 1), MAX_PER_PAGE))
    if count is not None:
        paginator.__dict__["count"] = count  # Paginator.count is a cached property
    return paginator.get_page(number)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    get: Callable[[Any], Any]  # the value exports carry and Python sorting uses
    order_by: str | None = None  # the database field a queryset sorts on; None: not sortable on querysets
    sortable: bool = True
    numeric: bool = False
    title: str = ""  # a tooltip saying what the column means
    shown: bool = True  # False: in exports and ?sort= only (the page shows it inside another cell)
    exported: bool = True  # False: a sort key only (?sort= and the API's sort), in no export


@dataclass
class Header:
    column: Column
    href: str | None
    active: bool
    descending: bool


@dataclass
class Table:
    name: str
    columns: Sequence[Column]
    default_sort: str
    per_page: int = 50
    prefix: str = ""
    # Extra fields every exported row carries beyond the columns (e.g. the protocol beside a score).
    extra: Callable[[Any], dict[str, Any]] | None = None
    # Everything a row's exported record is built from, hashable (None: that row's record is built every time): a
    # table that names it keeps its rows' records, and the text they were written as, in ``RECORDS``.
    row_key: Callable[[Any], Any] | None = None
    _by_key: dict[str, Column] = field(init=False, repr=False)
    _record_key: tuple[Any, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {c.key: c for c in self.columns}
        # which record a row is built into: the exported columns (each with how it is read) and the extra fields
        self._record_key = (tuple((c.key, c.get) for c in self.columns if c.exported), self.extra)

    # --- query string ---

    def param(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def sort_keys(self) -> list[str]:
        """Every value ``?sort=`` (and the API's ``sort``) accepts: each sortable column's key, ``-`` for descending."""
        return [s for c in self.columns if c.sortable for s in (c.key, f"-{c.key}")]

    def sort_by(self, sort: str | None) -> tuple[Column, bool]:
        """The column and direction ``sort`` names; the default when it names no sortable column."""
        for raw in (sort or "", self.default_sort):
            key = raw.lstrip("-")
            column = self._by_key.get(key)
            if column is not None and column.sortable:
                return column, raw.startswith("-")
        raise ValueError(f"table {self.name}: default sort {self.default_sort!r} names no sortable column")

    def sort_of(self, request: HttpRequest) -> tuple[Column, bool]:
        """The column and direction ``?sort=`` asks for."""
        return self.sort_by(request.GET.get(self.param("sort")))

    # --- rows ---

    def sorted(self, request: HttpRequest, rows: QuerySet | Iterable[Any]) -> QuerySet | list[Any]:
        return self.order(rows, request.GET.get(self.param("sort")))

    def order(self, rows: QuerySet | Iterable[Any], sort: str | None) -> QuerySet | list[Any]:
        """``rows`` sorted by ``sort`` (see :meth:`sort_by`), missing values last; ties keep the rows' own order."""
        column, descending = self.sort_by(sort)
        if isinstance(rows, QuerySet):
            if column.order_by is None:
                return rows
            expression = F(column.order_by)
            if _never_null(rows, column.order_by):
                # (the same order without "NULLS LAST", which one index on the column then gives either way)
                ordered = expression.desc() if descending else expression.asc()
            else:
                ordered = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
            return rows.order_by(ordered, *rows.query.order_by)  # the selector's order breaks ties
        items = list(rows)
        present = [r for r in items if _sortable_value(column.get(r)) is not None]
        missing = [r for r in items if _sortable_value(column.get(r)) is None]
        present.sort(key=lambda r: _sortable_value(column.get(r)), reverse=descending)  # stable: ties keep order
        return present + missing

    def page(self, request: HttpRequest, rows: QuerySet | list[Any], count: int | None = None) -> Page:
        try:
            per_page = int(request.GET.get(self.param("per_page"), self.per_page))
        except ValueError:
            per_page = self.per_page
        return paginate(rows, number=request.GET.get(self.param("page")), per_page=per_page, count=count)

    def headers(self, request: HttpRequest) -> list[Header]:
        column, descending = self.sort_of(request)
        headers = []
        for c in self.columns:
            if not c.shown:
                continue
            if not c.sortable:
                headers.append(Header(c, None, False, False))
                continue
            active = c.key == column.key
            # the first click sorts numbers best-first (descending), text A-Z; a second click flips it
            want_desc = (not descending) if active else c.numeric
            query = _query(
                request.GET, {self.param("sort"): ("-" if want_desc else "") + c.key, self.param("page"): None}
            )
            headers.append(Header(c, "?" + query, active, descending if active else False))
        return headers

    def page_links(self, request: HttpRequest, page: Page) -> dict[str, str | None]:
        def link(number: int) -> str:
            return "?" + _query(request.GET, {self.param("page"): str(number)})

        return {
            "first": link(1) if page.number > 1 else None,
            "previous": link(page.previous_page_number()) if page.has_previous() else None,
            "next": link(page.next_page_number()) if page.has_next() else None,
            "last": link(page.paginator.num_pages) if page.number < page.paginator.num_pages else None,
        }

    def context(
        self,
        request: HttpRequest,
        rows: QuerySet | Iterable[Any],
        count: int | None = None,
        convert: Callable[[Iterable[Any]], list[Any]] | None = None,
    ) -> dict[str, Any]:
        """What the ``_table_*`` template includes need: the page of rows, headers, page and export links (``count``:
        the number of rows, when known; ``convert``: turns the page's stored rows into what the columns read)."""
        page = self.page(request, self.sorted(request, rows), count=count)
        return {
            "name": self.name,
            "page": page,
            "rows": convert(page.object_list) if convert is not None else page.object_list,
            "headers": self.headers(request),
            "links": self.page_links(request, page),
            "export": {
                fmt: "?" + _query(request.GET, {"format": fmt, "table": self.name, self.param("page"): None})
                for fmt in EXPORT_FORMATS
            },
        }

    # --- export ---

    def wants_export(self, request: HttpRequest, *, main: bool) -> bool:
        fmt = request.GET.get("format")
        return fmt in EXPORT_FORMATS and request.GET.get("table", self.name if main else "") == self.name

    def record(self, row: Any) -> dict[str, Any]:
        if self.row_key is not None:
            key = self.row_key(row)
            if key is not None:
                return RECORDS.get_or_build((self._record_key, key), lambda: KeptRecord(self._record(row)))
        return self._record(row)

    def _record(self, row: Any) -> dict[str, Any]:
        # ``_plain`` of each value, its common cases written out (a call per cell was about a tenth of an export
        # whose rows were all built afresh)
        record = {}
        isfinite = math.isfinite
        values = ((key, get(row)) for key, get in self._record_key[0])  # the exported columns, chosen once
        for part in (values, self.extra(row).items() if self.extra is not None else ()):
            for key, value in part:
                kind = type(value)
                if kind is float:
                    record[key] = value if isfinite(value) else None
                elif kind is str or kind is int or kind is bool or value is None:
                    record[key] = value
                else:
                    record[key] = _plain(value)
        return record

    def records(self, rows: Iterable[Any]) -> list[dict[str, Any]]:
        return [self.record(row) for row in rows]

    def export(
        self,
        request: HttpRequest,
        rows: QuerySet | Iterable[Any],
        *,
        filename: str,
        meta: dict[str, Any] | None = None,
        convert: Callable[[QuerySet], Iterable[Any]] | None = None,
    ) -> HttpResponse:
        """One page of the sorted table as CSV or JSON, streamed: ``?page=`` (default 1) of ``?per_page=`` rows
        (default EXPORT_PAGE_ROWS, at most MAX_EXPORT_PAGE_ROWS), so an export costs the same whatever the size of
        the table. The JSON names the page and the next one's address (``next``, null on the last); the CSV gives
        it in a ``Link: <...>; rel="next"`` header. A queryset is read in chunks (``.iterator()``) and each row
        written as it comes (``convert``: reads the sorted queryset's stored rows, in chunks, as what the columns
        read)."""
        ordered = self.sorted(request, rows)
        number, per_page = self.export_page(request)
        start = (number - 1) * per_page
        if isinstance(ordered, QuerySet) and convert is not None:
            # The page's rows are read whole: one row past them, read with them, says whether there is a next page
            # (no query of its own to compile and run).
            read = list(convert(ordered[start : start + per_page + 1]))
            more = len(read) > per_page
            source: Iterable[Any] = iter(read[:per_page])
        elif isinstance(ordered, QuerySet):
            window = ordered[start : start + per_page]
            more = ordered[start + per_page : start + per_page + 1].exists()  # one row past the page: a next page
            source = window.iterator(chunk_size=EXPORT_CHUNK_ROWS)
        else:
            items = list(ordered)
            more = len(items) > start + per_page
            source = iter(items[start : start + per_page])
        kept = {"format": request.GET.get("format"), "table": request.GET.get("table")}  # still this export
        following = ("?" + _query(request.GET, {self.param("page"): str(number + 1), **kept})) if more else None
        records = (self.record(row) for row in source)
        if request.GET.get("format") == "json":
            head = {"table": self.name, **(meta or {}), "page": number, "per_page": per_page, "next": following}
            response = ExportResponse(json_lines(head, records), content_type="application/json")
            response["Content-Disposition"] = f'inline; filename="{filename}.json"'
        else:
            first = next(records, None)  # the header names the first row's fields (the columns, then any extra)
            fields = list(first) if first is not None else [c.key for c in self.columns if c.exported]
            rest = itertools.chain([first], records) if first is not None else iter(())
            response = ExportResponse(csv_lines(fields, rest), content_type="text/csv; charset=utf-8")
            suffix = f"-page-{number}" if number > 1 else ""
            response["Content-Disposition"] = f'attachment; filename="{filename}{suffix}.csv"'
        if following:
            response["Link"] = f'<{following}>; rel="next"'
        return response

    def export_page(self, request: HttpRequest) -> tuple[int, int]:
        """The page number and rows per page an export asks for (bad values: the defaults; too many rows: the
        most allowed)."""
        try:
            number = max(int(request.GET.get(self.param("page"), 1)), 1)
        except ValueError:
            number = 1
        try:
            per_page = int(request.GET.get(self.param("per_page"), EXPORT_PAGE_ROWS))
        except ValueError:
            per_page = EXPORT_PAGE_ROWS
        return number, min(max(per_page, 1), MAX_EXPORT_PAGE_ROWS)


# Rows' exported records (with the text each was written as), built once per process for the same inputs: about 4 KB
# a row of runs.
RECORDS = Memo(2048)


EXPORT_CHUNK_ROWS = 500  # rows an export reads per round trip to the database


def _never_null(rows: QuerySet, name: str) -> bool:
    """Whether ``name`` is a column of the rows' own table that is never null (NOT NULL): sorting by it puts no
    missing value anywhere, so "missing values last" need not be said."""
    if "__" in name:
        return False  # (a related row's column: null where there is no such row)
    try:
        field = rows.model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return bool(getattr(field, "concrete", False)) and not field.null


def _sortable_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value.lower()
    return value


def _plain(value: Any) -> Any:
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:  # most cells, by exact type
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _query(params: QueryDict, changes: dict[str, str | None]) -> str:
    """``params`` with ``changes`` (None: the key left out) and without the export's keys, as ``QueryDict.urlencode``
    writes it: a copy of a QueryDict is a deep copy, and a page writes some thirty of these links."""
    query = dict(params.lists())  # in the query's order; a key set anew keeps its place, as in a QueryDict
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = [value]
    for key in ("format", "table"):
        if key not in changes:
            query.pop(key, None)
    encoding = params.encoding or "utf-8"
    return "&".join(
        f"{quote_plus(key.encode(encoding))}={quote_plus(str(value).encode(encoding))}"
        for key, values in query.items()
        for value in values
    )
