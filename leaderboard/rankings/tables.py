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
from typing import Any, Callable, Iterable, Iterator, Sequence

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict

from leaderboard.rankings import metrics, scores, significance
from leaderboard.rankings.export_stream import ExportResponse, csv_lines, json_lines

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
    _by_key: dict[str, Column] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {c.key: c for c in self.columns}

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
        record = {c.key: _plain(c.get(row)) for c in self.columns if c.exported}
        if self.extra is not None:
            record.update({k: _plain(v) for k, v in self.extra(row).items()})
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
        convert: Callable[[QuerySet], Iterator[Any]] | None = None,
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
        if isinstance(ordered, QuerySet):
            window = ordered[start : start + per_page]
            more = ordered[start + per_page : start + per_page + 1].exists()  # one row past the page: a next page
            source: Iterator[Any] = (
                convert(window) if convert is not None else window.iterator(chunk_size=EXPORT_CHUNK_ROWS)
            )
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


EXPORT_CHUNK_ROWS = 500  # rows an export reads per round trip to the database


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


# --- the site's tables ----------------------------------------------------------------------------------
#
# Scores are exported as plain fractions (0.5, not "50 %") with every digit; each exported row of a model run
# carries its protocol beside its scores.


def _score(name: str) -> Callable[[Any], Any]:
    def get(run: Any) -> Any:
        return getattr(getattr(run, "score", None), name, None)  # a missing RunScore reads as None

    return get


def _run_extra(run: Any) -> dict[str, Any]:
    return {
        **scores.protocol_fields(run),
        "scored_at_k": _score("k")(run),
        "provider": run.provider,
        "open_weights": run.open_weights,
        "suite": run.suite,
        "state": run.state,
        "attempts_done": run.attempts_done,
        "attempts_total": run.attempts_total,
        "problems_scored": _score("problems_scored")(run),
        "problems_not_scorable": _score("problems_not_scorable")(run),
        "problems_not_attempted": _score("problems_not_attempted")(run),
        "is_demo": run.is_demo,
        "status": _score("status")(run) or "unfinished",
        "suite_version": run.suite_version,
        "timed": _score("timed")(run),
        "speedup_note": metrics.speed_note(run.profile),
        "protocol_revision": _score("protocol_revision")(run),
        **{
            f"{name}_ci": [_score(low)(run), _score(high)(run)]
            for name, (low, high) in (
                ("pass_at_k", ("pass_at_k_low", "pass_at_k_high")),
                ("fast_1", ("fast_1_low", "fast_1_high")),
                ("fast_1_5", ("fast_1_5_low", "fast_1_5_high")),
                ("fast_2", ("fast_2_low", "fast_2_high")),
                ("speedup", ("geomean_low", "geomean_high")),
            )
        },
        "url": f"/runs/{run.pk}/",
    }


RUN_COLUMNS = [
    Column("id", "Run", lambda r: r.pk, "id", numeric=True, shown=False),
    Column(
        "rank",
        "#",
        lambda r: significance.rank_label(getattr(r, "rank_range", None)) or None,
        sortable=False,
        title="rank range: 1 + the runs significantly better (95 % interval wholly above) .. N - those "
        "significantly worse; unfinished and partial runs get none",
    ),
    Column("model", "Model", lambda r: r.model, "model"),
    Column("user", "By", lambda r: r.user.get_username(), "user__username", shown=False),
    Column("profile", "Hardware", lambda r: r.profile, "profile"),
    Column("precision", "Precision", lambda r: r.precision or None, "precision", shown=False),
    Column(
        "protocol",
        "Protocol",
        lambda r: metrics.Protocol.of_run(r).label(),
        sortable=False,
        title="how the attempts were produced; every score on the row was obtained this way",
    ),
    Column("k", "k", lambda r: r.k, "k", numeric=True, title="attempts per problem"),
    Column(
        "pass_at_k",
        "pass@k",
        _score("pass_at_k"),
        "score__pass_at_k",
        numeric=True,
        title="unbiased pass@k at the run's own k, mean over scorable problems",
    ),
    Column(
        "pass_at_1",
        "pass@1",
        _score("pass_at_1"),
        "score__pass_at_1",
        numeric=True,
        title="pass@1 estimated from the same k attempts: comparable across runs with different k",
    ),
    *[
        Column(
            metrics.interval_key(p),
            metrics.fast_p_label(p),
            _score(metrics.fast_p_field(p)),
            f"score__{metrics.fast_p_field(p)}",
            numeric=True,
            title="correct and faster than the PyTorch + NCCL baseline, at k"
            if p == 1.0
            else f"correct and more than {p:g}× faster than the baseline, at k",
        )
        for p in metrics.FAST_P_THRESHOLDS
    ],
    Column(
        "speedup",
        "Geomean",
        _score("geomean_speedup"),
        "score__geomean_speedup",
        numeric=True,
        title="geometric-mean speedup over every correct, timed attempt",
    ),
    Column(
        "roofline",
        "Roofline",
        _score("mean_roofline_fraction"),
        "score__mean_roofline_fraction",
        numeric=True,
        title="mean fraction of the roofline reached by correct attempts",
    ),
    Column(
        "coverage",
        "Coverage",
        _score("coverage"),
        "score__coverage",
        numeric=True,
        title="scorable problems / problems of the suite on this hardware",
    ),
    Column(
        "progress",
        "Done",
        lambda r: f"{r.attempts_done}/{r.attempts_total}",
        sortable=False,
        title="attempts evaluated / attempts uploaded",
    ),
    Column("created", "Uploaded", lambda r: r.created_at, "created_at", numeric=True),
    Column("tokens", "Tokens", lambda r: r.tokens, "tokens", numeric=True, shown=False, exported=False),
    Column("wall_time", "Wall time", lambda r: r.wall_time_s, "wall_time_s", numeric=True, shown=False, exported=False),
]
RUN_DEFAULT_SORT = "-pass_at_k"


def run_ranking_table(*, prefix: str = "", name: str = "runs") -> Table:
    """The overall ranking of model runs: its columns are the one definition of its sort keys (page and API)."""
    return Table(name, RUN_COLUMNS, default_sort=RUN_DEFAULT_SORT, prefix=prefix, extra=_run_extra)


def _ps(name: str, p: float | None = None) -> Callable[[Any], Any]:
    """A field of a row's ProblemScore (``row.score``)."""

    def get(row: Any) -> Any:
        value = getattr(row.score, name)
        return value.get(p) if p is not None else value

    return get


def run_problems_table() -> Table:
    """The run page's grid: one row per attempted problem with its per-problem scores."""
    return Table(
        "problems",
        [
            Column("problem", "Problem", lambda r: r.problem_id),
            Column("category", "Category", lambda r: r.category),
            Column("n", "n", _ps("n"), numeric=True, title="attempts counted (infra errors and unfinished left out)"),
            Column("c", "correct", _ps("c"), numeric=True),
            Column("pass_at_k", "pass@k", _ps("pass_at_k"), numeric=True),
            *[
                Column(metrics.interval_key(p), metrics.fast_p_label(p), _ps("fast_p_at_k", p), numeric=True)
                for p in metrics.FAST_P_THRESHOLDS
            ],
            Column("best_speedup", "Best speedup", _ps("best_speedup"), numeric=True),
            Column("geomean_speedup", "Geomean speedup", _ps("geomean_speedup"), numeric=True),
            Column("roofline", "Roofline", _ps("mean_roofline_fraction"), numeric=True),
        ],
        default_sort="category",
        per_page=100,
    )


def run_attempts_table(*, profile: str = "") -> Table:
    """A run's attempts; on a profile that does not measure speed (``profile``: the run's) their speedups and
    roofline fractions are null with a note saying why, as the page says "not computed"."""
    timed = metrics.measures_speed(profile) if profile else True
    note = metrics.speed_note(profile) if profile else None
    return Table(
        "attempts",
        [
            Column("problem", "Problem", lambda a: a.problem_id),
            Column("category", "Category", lambda a: a.category),
            Column("attempt", "Attempt", lambda a: a.attempt, numeric=True),
            Column("state", "State", lambda a: a.state),
            Column("verdict", "Verdict", lambda a: a.verdict),
            Column("speedup", "Speedup", lambda a: a.speedup if timed else None, numeric=True),
            Column("roofline_fraction", "Roofline", lambda a: a.roofline_fraction if timed else None, numeric=True),
            Column("solution_median_us", "Solution median (µs)", lambda a: a.solution_median_us, numeric=True),
            Column("baseline_median_us", "Baseline median (µs)", lambda a: a.baseline_median_us, numeric=True),
            Column("submission", "Submission", lambda a: a.submission_id, numeric=True),
        ],
        default_sort="problem",
        per_page=500,
        extra=lambda a: {"speedup_note": note},
    )


def _agg(name: str, p: float | None = None) -> Callable[[Any], Any]:
    def get(row: Any) -> Any:
        value = getattr(row[1], name)
        return value.get(p) if p is not None else value

    return get


def run_categories_table() -> Table:
    """Rows are (category, metrics.Aggregate) pairs."""
    return Table(
        "categories",
        [
            Column("category", "Category", lambda r: r[0]),
            Column("problems", "Scored problems", _agg("problems"), numeric=True),
            Column("pass_at_k", "pass@k", _agg("mean_pass_at_k"), numeric=True),
            *[
                Column(metrics.interval_key(p), metrics.fast_p_label(p), _agg("mean_fast_p_at_k", p), numeric=True)
                for p in metrics.FAST_P_THRESHOLDS
            ],
            Column("speedup", "Geomean speedup", _agg("geomean_speedup"), numeric=True),
            Column("roofline", "Roofline", _agg("mean_roofline_fraction"), numeric=True),
            Column("coverage", "Coverage", _agg("coverage"), numeric=True),
        ],
        default_sort="category",
        per_page=100,
    )


NOT_TIMED_NOTE = "not computed: this profile times on a CPU, which only checks the pipeline"


def problem_ranking_table() -> Table:
    return Table(
        "ranking",
        [
            Column(
                "rank",
                "#",
                lambda e: e.rank,
                order_by="rank",
                numeric=True,
                title="position; the range beside it is what the intervals allow (1 + significantly faster rows)",
            ),
            Column("rank_range", "Rank range", lambda e: e.rank_label or None, sortable=False, shown=False),
            Column("who", "Solution by", lambda e: e.model or e.username, order_by="who_key"),
            Column("protocol", "Protocol", lambda e: e.protocol or None, order_by="protocol_key"),
            Column(
                "speedup",
                "Speedup",
                lambda e: e.speedup,
                order_by="speedup",
                numeric=True,
                title="pooled over every evaluation of this code (random-effects mean of log speedups)",
            ),
            Column("speedup_ci_low", "CI low", lambda e: e.speedup_ci_low, numeric=True, sortable=False),
            Column("speedup_ci_high", "CI high", lambda e: e.speedup_ci_high, numeric=True, sortable=False),
            Column(
                "evaluations",
                "Evaluations",
                lambda e: e.evaluations,
                order_by="evaluations",
                numeric=True,
                title="evaluations of this code (after removing comments and layout) pooled into the figure",
            ),
            Column("estimator", "Formed as", lambda e: e.estimator or None, sortable=False, shown=False),
            Column(
                "protocol_revision", "Protocol revision", lambda e: e.protocol_revision, sortable=False, shown=False
            ),
            Column("problem_version", "Problem version", lambda e: e.problem_version, sortable=False, shown=False),
            Column(
                "verification",
                "Verified",
                lambda e: e.verification.state if e.verification else None,
                sortable=False,
                title="✓: re-measured and the intervals overlap; ⚠: re-measured and they do not",
            ),
            Column(
                "remeasured_speedup",
                "Re-measured",
                lambda e: e.verification.speedup if e.verification else None,
                sortable=False,
                shown=False,
            ),
            Column("pipeline_check", "Pipeline check", lambda e: e.pipeline_check, sortable=False, shown=False),
            Column(
                "solution_median_us",
                "Solution median (µs)",
                lambda e: e.solution_median_us,
                order_by="solution_median_us",
                numeric=True,
            ),
            Column(
                "baseline_median_us",
                "Baseline median (µs)",
                lambda e: e.baseline_median_us,
                order_by="baseline_median_us",
                numeric=True,
            ),
            Column(
                "roofline_fraction",
                "Roofline",
                lambda e: e.roofline_fraction,
                order_by="roofline_fraction",
                numeric=True,
            ),
            Column("submitted", "Submitted", lambda e: e.submitted_at, order_by="submitted_at", numeric=True),
        ],
        default_sort="rank",
        extra=lambda e: {
            "username": e.username,
            "submission_id": e.submission_id,
            "model_run_id": e.model_run_id,
            "speedup_note": None if e.timed else NOT_TIMED_NOTE,
        },
    )


def comparison_table() -> Table:
    """Rows are comparison.ComparisonRow: one problem, both runs' scores at the common k."""

    def side(which: str, name: str, p: float | None = None) -> Callable[[Any], Any]:
        def get(row: Any) -> Any:
            score = getattr(row, which)
            if score is None:
                return None
            value = getattr(score, name)
            return value.get(p) if p is not None else value

        return get

    return Table(
        "problems",
        [
            Column("problem", "Problem", lambda r: r.problem_id),
            Column("category", "Category", lambda r: r.category),
            Column("a_pass_at_k", "A pass@k", side("a", "pass_at_k"), numeric=True),
            Column("b_pass_at_k", "B pass@k", side("b", "pass_at_k"), numeric=True),
            Column("a_fast_1", "A fast₁@k", side("a", "fast_p_at_k", 1.0), numeric=True),
            Column("b_fast_1", "B fast₁@k", side("b", "fast_p_at_k", 1.0), numeric=True),
            Column("a_best_speedup", "A best speedup", side("a", "best_speedup"), numeric=True),
            Column("b_best_speedup", "B best speedup", side("b", "best_speedup"), numeric=True),
            Column(
                "ratio",
                "B / A",
                lambda r: r.speedup_ratio,
                numeric=True,
                title="B's geomean speedup over A's on this problem (each over its correct timed attempts)",
            ),
        ],
        default_sort="category",
        per_page=100,
    )


def best_solutions_table(*, prefix: str = "sol_") -> Table:
    return Table(
        "solutions",
        [
            Column("problem", "Problem", lambda s: s.problem_id),
            Column("profile", "Hardware", lambda s: s.profile),
            Column("speedup", "Best speedup", lambda s: metrics.speed_or_none(s.profile, s.speedup), numeric=True),
            Column(
                "roofline_fraction",
                "Roofline",
                lambda s: metrics.speed_or_none(s.profile, s.roofline_fraction),
                numeric=True,
            ),
            Column("submitted", "Submitted", lambda s: s.submitted_at, numeric=True),
            Column("submission", "Submission", lambda s: s.submission_id, numeric=True),
        ],
        default_sort="problem",
        prefix=prefix,
        extra=lambda s: {"speedup_note": metrics.speed_note(s.profile)},
    )
