"""``?format=csv|json`` for the site's list pages that are not rankings (the catalogue, one's submissions), with the
one export rule of ``rankings.tables``: the whole sorted table, ``?sort=`` honoured, every digit kept.

``exportable`` wraps a view: when the request asks for an export of the page's table, the table answers it; otherwise
the page renders as before. Rankings declare their tables in ``rankings/tables.py``; these are lists, so here."""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable

from django.http import HttpRequest, HttpResponse

from leaderboard.catalogue import selectors as catalogue
from leaderboard.rankings.tables import Column, Table
from leaderboard.submissions import selectors as submissions


def exportable(table: Callable[[], Table], rows: Callable[..., Any], *, filename: str | Callable[..., str],
               meta: Callable[..., dict] | None = None):
    """A view decorator: ``?format=csv|json`` returns ``table()`` over ``rows(request, **kwargs)``."""
    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            t = table()
            if t.wants_export(request, main=True):
                name = filename(request, **kwargs) if callable(filename) else filename
                return t.export(request, rows(request, **kwargs), filename=name,
                                meta=meta(request, **kwargs) if meta else None)
            return view(request, *args, **kwargs)
        return wrapper
    return decorate


def problem_list_table() -> Table:
    """The catalogue (the home page): one row per active problem."""
    return Table("problems", [
        Column("id", "Problem", lambda p: p.id, order_by="id"),
        Column("category", "Category", lambda p: p.category, order_by="category"),
        Column("title", "Title", lambda p: p.title, order_by="title"),
        Column("version", "Version", lambda p: p.version, order_by="version", numeric=True),
        Column("world_sizes", "World sizes", lambda p: list(p.world_sizes or []), sortable=False),
        Column("profiles", "Hardware profiles", lambda p: p.supported_profiles, sortable=False),
        Column("suite", "Suite", lambda p: p.suite, order_by="suite"),
        Column("tags", "Tags", lambda p: p.tag_list, sortable=False),
        Column("summary", "Summary", lambda p: p.summary, sortable=False),
    ], default_sort="category")


def problem_rows(request: HttpRequest, **_) -> Any:
    return catalogue.problem_list(category=request.GET.get("category") or None)


def submission_list_table() -> Table:
    """One's own solo submissions (/submissions/), newest first."""
    return Table("submissions", [
        Column("id", "#", lambda s: s.pk, order_by="id", numeric=True),
        Column("problem", "Problem", lambda s: s.problem_id, order_by="problem_id"),
        Column("problem_version", "Problem version", lambda s: s.problem_version, order_by="problem_version",
               numeric=True),
        Column("profile", "Profile", lambda s: s.profile, order_by="profile"),
        Column("filename", "File", lambda s: s.filename, order_by="filename"),
        Column("state", "State", lambda s: s.state, order_by="state"),
        Column("verdict", "Verdict", lambda s: s.verdict, order_by="verdict"),
        Column("speedup", "Speedup", lambda s: getattr(getattr(s, "result", None), "speedup", None),
               order_by="result__speedup", numeric=True),
        Column("submitted", "Submitted", lambda s: s.created_at, order_by="created_at", numeric=True),
        Column("finished", "Finished", lambda s: s.finished_at, order_by="finished_at", numeric=True),
    ], default_sort="-submitted")


def submission_rows(request: HttpRequest, **_) -> Any:
    return submissions.submission_list(user=request.user)
