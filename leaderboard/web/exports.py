"""``?format=csv|json`` for the site's list pages that are not rankings (the catalogue, one's submissions), with the
one export rule of ``rankings.tables``: the whole sorted table, ``?sort=`` honoured, every digit kept.

``exportable`` wraps a view: when the request asks for an export of the page's table, the table answers it; otherwise
the page renders as before. Rankings declare their tables in ``rankings/tables.py``; these are lists, so here."""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.cache import add_never_cache_headers

from leaderboard.catalogue import selectors as catalogue
from leaderboard.rankings.tables import EXPORT_FORMATS, Column, Table
from leaderboard.submissions import selectors as submissions


def exportable(
    table: Callable[[], Table],
    rows: Callable[..., Any],
    *,
    filename: str | Callable[..., str],
    meta: Callable[..., dict] | None = None,
):
    """A view decorator: ``?format=csv|json`` returns ``table()`` over ``rows(request, **kwargs)``."""

    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            t = table()
            if t.wants_export(request, main=True):
                name = filename(request, **kwargs) if callable(filename) else filename
                return t.export(
                    request, rows(request, **kwargs), filename=name, meta=meta(request, **kwargs) if meta else None
                )
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def problem_list_table() -> Table:
    """The catalogue (the home page): one row per active problem."""
    return Table(
        "problems",
        [
            Column("id", "Problem", lambda p: p.id, order_by="id"),
            Column("category", "Category", lambda p: p.category, order_by="category"),
            Column("title", "Title", lambda p: p.title, order_by="title"),
            Column("version", "Version", lambda p: p.version, order_by="version", numeric=True),
            Column("world_sizes", "World sizes", lambda p: list(p.world_sizes or []), sortable=False),
            Column("profiles", "Hardware profiles", lambda p: p.supported_profiles, sortable=False),
            Column("suite", "Suite", lambda p: p.suite, order_by="suite"),
            Column("tags", "Tags", lambda p: p.tag_list, sortable=False),
            Column("summary", "Summary", lambda p: p.summary, sortable=False),
        ],
        default_sort="category",
    )


def problem_rows(request: HttpRequest, **_) -> Any:
    return catalogue.problem_list(category=request.GET.get("category") or None)


def submission_list_table() -> Table:
    """One's own solo submissions (/submissions/), newest first."""
    return Table(
        "submissions",
        [
            Column("id", "#", lambda s: s.pk, order_by="id", numeric=True),
            Column("problem", "Problem", lambda s: s.problem_id, order_by="problem_id"),
            Column(
                "problem_version",
                "Problem version",
                lambda s: s.problem_version,
                order_by="problem_version",
                numeric=True,
            ),
            Column("profile", "Profile", lambda s: s.profile, order_by="profile"),
            Column("filename", "File", lambda s: s.filename, order_by="filename"),
            Column("state", "State", lambda s: s.state, order_by="state"),
            Column("verdict", "Verdict", lambda s: s.verdict, order_by="verdict"),
            Column(
                "speedup",
                "Speedup",
                lambda s: getattr(getattr(s, "result", None), "speedup", None),
                order_by="result__speedup",
                numeric=True,
            ),
            Column("submitted", "Submitted", lambda s: s.created_at, order_by="created_at", numeric=True),
            Column("finished", "Finished", lambda s: s.finished_at, order_by="finished_at", numeric=True),
        ],
        default_sort="-submitted",
    )


def submission_rows(request: HttpRequest, **_) -> Any:
    return submissions.submission_list(user=request.user)


def unknown_format(request: HttpRequest, tables: tuple[str, ...] = ()) -> HttpResponse | None:
    """A 400 naming the formats (and the page's tables) that exist when ``?format=`` asks for another one; None when
    the request asks for no format or for one that exists. Before, such a request got the HTML page as if no format
    had been asked for, and a script read HTML as CSV."""
    fmt = request.GET.get("format")
    table = request.GET.get("table")
    if fmt in (None, "") or (fmt in EXPORT_FORMATS and (table is None or not tables or table in tables)):
        return None
    formats = " or ".join(f"?format={f}" for f in EXPORT_FORMATS)
    if fmt not in EXPORT_FORMATS:
        message = f"No format {fmt!r} here: this page exports as {formats}."
    else:
        message = f"No table {table!r} here: this page's tables are {', '.join(tables)} (?table=NAME&format={fmt})."
    return HttpResponseBadRequest(message + "\n", content_type="text/plain; charset=utf-8")


def queue_table() -> Table:
    """``/queues/``: one row per hardware profile's queue (``submissions.queues.queue_overview``)."""
    return Table(
        "queues",
        [
            Column("profile", "Hardware profile", lambda q: q.profile),
            Column("queue", "Queue", lambda q: q.queue),
            Column("live_workers", "Live workers", lambda q: q.workers, numeric=True),
            Column("waiting", "Waiting", lambda q: q.waiting, numeric=True),
            Column("typical_s", "Typical evaluation (s)", lambda q: q.typical_s, numeric=True),
            Column("description", "Description", lambda q: q.description, sortable=False),
        ],
        default_sort="profile",
    )


def dataset_table() -> Table:
    """``/datasets/``: one row per dataset config, with its download links."""
    return Table(
        "datasets",
        [
            Column("config", "Config", lambda c: c["config"]),
            Column("jsonl", "JSONL", lambda c: c["jsonl"], sortable=False),
            Column("parquet", "Parquet", lambda c: c["parquet"], sortable=False),
        ],
        default_sort="config",
    )


def comparison_summary_table() -> Table:
    """The comparison page's summary: one row per figure, both runs' values, in the page's order (rows:
    (position, (label, a, b, kind)))."""
    return Table(
        "summary",
        [
            Column("position", "#", lambda r: r[0], numeric=True, exported=False),
            Column("figure", "Figure", lambda r: r[1][0], sortable=False),
            Column("a", "A", lambda r: r[1][1], numeric=True, sortable=False),
            Column("b", "B", lambda r: r[1][2], numeric=True, sortable=False),
            Column("kind", "Kind", lambda r: r[1][3], sortable=False),
        ],
        default_sort="position",
    )


def comparison_category_table() -> Table:
    """The comparison page's categories: one row per category, both runs' aggregates (rows: (category, a, b))."""

    def figure(side: int, name: str, p: float | None = None):
        def get(r):
            agg = r[side]
            value = getattr(agg, name, None) if agg is not None else None
            return value.get(p) if p is not None and isinstance(value, dict) else value

        return get

    return Table(
        "categories",
        [
            Column("category", "Category", lambda r: r[0]),
            Column("a_pass_at_k", "A pass@k", figure(1, "mean_pass_at_k"), numeric=True),
            Column("b_pass_at_k", "B pass@k", figure(2, "mean_pass_at_k"), numeric=True),
            Column("a_fast_1", "A fast₁@k", figure(1, "mean_fast_p_at_k", 1.0), numeric=True),
            Column("b_fast_1", "B fast₁@k", figure(2, "mean_fast_p_at_k", 1.0), numeric=True),
            Column("a_geomean", "A geomean", figure(1, "geomean_speedup"), numeric=True),
            Column("b_geomean", "B geomean", figure(2, "geomean_speedup"), numeric=True),
        ],
        default_sort="category",
    )


def computing_export(*, retry_after_s: int) -> HttpResponse:
    """An export of a comparison not computed yet: 202 with Retry-After, never cached."""
    response = JsonResponse({"status": "computing", "retry_after_s": retry_after_s}, status=202)
    response["Retry-After"] = str(retry_after_s)
    add_never_cache_headers(response)
    return response
