"""``?format=csv|json`` of one's proposals (/contribute/proposals/), through the site's one table/export rule."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from leaderboard.rankings.tables import Column, Table
from portal.contributions import selectors


def proposal_list_table() -> Table:
    return Table(
        "proposals",
        [
            Column("id", "#", lambda p: p.pk, order_by="id", numeric=True),
            Column("problem", "Problem", lambda p: p.problem_id, sortable=False),
            Column("category", "Category", lambda p: p.category, order_by="category"),
            Column("name", "Name", lambda p: p.name, order_by="name"),
            Column("title", "Title", lambda p: p.title, order_by="title"),
            Column("version", "Version", lambda p: p.version, order_by="version", numeric=True),
            Column("state", "State", lambda p: p.state, order_by="state"),
            Column(
                "check",
                "Check",
                lambda p: (p.check_report or {}).get("message") if isinstance(p.check_report, dict) else None,
                sortable=False,
            ),
            Column("moderator_note", "Moderator's note", lambda p: p.moderator_note, sortable=False),
            Column("proposed", "Proposed", lambda p: p.created_at, order_by="created_at", numeric=True),
            Column("reviewed", "Reviewed", lambda p: p.reviewed_at, order_by="reviewed_at", numeric=True),
        ],
        default_sort="-proposed",
    )


def proposal_rows(request: HttpRequest, **_) -> Any:
    return selectors.proposal_list(user=request.user)
