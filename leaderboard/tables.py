"""Sorting, pagination and CSV/JSON export of the site's tables, driven by the query string.

A page declares a :class:`Table` (its columns, how each is read and sorted, its default order) and hands it
the rows a selector returned. ``?sort=<key>`` / ``?sort=-<key>`` orders it on the server, ``?page=N`` pages
it, and ``?format=csv|json`` (with ``&table=<name>`` on pages that show several tables) returns the whole
sorted table as a file. A page with several tables gives each but one a ``prefix`` so their parameters do
not collide (``runs_sort``, ``runs_page``).

Querysets are sorted and sliced by the database (a column's ``order_by``); lists are sorted in Python
(a column's ``get``), missing values last either way.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict

EXPORT_FORMATS = ("csv", "json")
MAX_EXPORT_ROWS = 20_000


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    get: Callable[[Any], Any]  # the value exports carry and Python sorting uses
    order_by: str | None = None  # the database field a queryset sorts on; None: not sortable on querysets
    sortable: bool = True
    numeric: bool = False
    title: str = ""  # a tooltip saying what the column means


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
    _by_key: dict[str, Column] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {c.key: c for c in self.columns}

    # --- query string ---

    def param(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def sort_of(self, request: HttpRequest) -> tuple[Column, bool]:
        """The column and direction ``?sort=`` asks for; the default when it names no sortable column."""
        for raw in (request.GET.get(self.param("sort"), ""), self.default_sort):
            key = raw.lstrip("-")
            column = self._by_key.get(key)
            if column is not None and column.sortable:
                return column, raw.startswith("-")
        raise ValueError(f"table {self.name}: default sort {self.default_sort!r} names no sortable column")

    # --- rows ---

    def sorted(self, request: HttpRequest, rows: QuerySet | Iterable[Any]) -> QuerySet | list[Any]:
        column, descending = self.sort_of(request)
        if isinstance(rows, QuerySet):
            if column.order_by is None:
                return rows
            expression = F(column.order_by)
            ordered = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
            return rows.order_by(ordered, *rows.query.order_by)  # the selector's order breaks ties
        items = list(rows)
        present = [r for r in items if _sortable_value(column.get(r)) is not None]
        missing = [r for r in items if _sortable_value(column.get(r)) is None]
        present.sort(key=lambda r: _sortable_value(column.get(r)), reverse=descending)  # stable: ties keep order
        return present + missing

    def page(self, request: HttpRequest, rows: QuerySet | list[Any]) -> Page:
        try:
            per_page = int(request.GET.get(self.param("per_page"), self.per_page))
        except ValueError:
            per_page = self.per_page
        per_page = min(max(per_page, 5), 500)
        return Paginator(rows, per_page).get_page(request.GET.get(self.param("page")))

    def headers(self, request: HttpRequest) -> list[Header]:
        column, descending = self.sort_of(request)
        headers = []
        for c in self.columns:
            if not c.sortable:
                headers.append(Header(c, None, False, False))
                continue
            active = c.key == column.key
            # the first click sorts numbers best-first (descending), text A-Z; a second click flips it
            want_desc = (not descending) if active else c.numeric
            query = _query(request.GET, {self.param("sort"): ("-" if want_desc else "") + c.key,
                                         self.param("page"): None})
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

    def context(self, request: HttpRequest, rows: QuerySet | Iterable[Any]) -> dict[str, Any]:
        """What the ``_table_*`` template includes need: the page of rows, headers, page and export links."""
        page = self.page(request, self.sorted(request, rows))
        return {
            "name": self.name,
            "page": page,
            "rows": page.object_list,
            "headers": self.headers(request),
            "links": self.page_links(request, page),
            "export": {fmt: "?" + _query(request.GET, {"format": fmt, "table": self.name,
                                                       self.param("page"): None}) for fmt in EXPORT_FORMATS},
        }

    # --- export ---

    def wants_export(self, request: HttpRequest, *, main: bool) -> bool:
        fmt = request.GET.get("format")
        return fmt in EXPORT_FORMATS and request.GET.get("table", self.name if main else "") == self.name

    def records(self, rows: Iterable[Any]) -> list[dict[str, Any]]:
        records = []
        for row in rows:
            record = {c.key: _plain(c.get(row)) for c in self.columns}
            if self.extra is not None:
                record.update({k: _plain(v) for k, v in self.extra(row).items()})
            records.append(record)
        return records

    def export(self, request: HttpRequest, rows: QuerySet | Iterable[Any], *, filename: str,
               meta: dict[str, Any] | None = None) -> HttpResponse:
        """The whole sorted table (not one page) as CSV or JSON."""
        ordered = self.sorted(request, rows)
        records = self.records(ordered[:MAX_EXPORT_ROWS])
        fmt = request.GET.get("format")
        if fmt == "json":
            body = {"table": self.name, **(meta or {}), "rows": records}
            response = HttpResponse(json.dumps(body, indent=1, default=str), content_type="application/json")
            response["Content-Disposition"] = f'inline; filename="{filename}.json"'
            return response
        out = io.StringIO()
        fields = list(records[0]) if records else [c.key for c in self.columns]
        writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({k: _csv_cell(v) for k, v in record.items()})
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        return response


def _sortable_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value.lower()
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return repr(value)  # every digit: the export is data, not a rounded display
    return "" if value is None else value


def _query(params: QueryDict, changes: dict[str, str | None]) -> str:
    query = params.copy()
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    for key in ("format", "table"):
        if key not in changes:
            query.pop(key, None)
    return query.urlencode()
