"""A table's sort, page and export links are the query string ``QueryDict.copy()`` then ``urlencode()`` wrote:
repeated keys, keys set anew (in place) or dropped, the export's keys left out, text to quote."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from leaderboard.rankings.tables import _query


def _as_querydict_wrote(params: QueryDict, changes: dict) -> str:
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


@pytest.mark.parametrize(
    "query",
    [
        "",
        "sort=-fast_2&page=3&per_page=10",
        "profile=cpu-gloo-4&mode=agentic&k=3&k=5&format=csv&table=runs",
        "q=%C3%A9t%C3%A9+a%26b%3D%2B&tag=c+d&sort=model",
        "unranked_page=2&page=4&x=&y=1%2F2",
    ],
)
@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"sort": "-pass_at_k", "page": None},
        {"page": "2"},
        {"unranked_sort": "-k", "unranked_page": None},
        {"format": "json", "table": "runs", "page": None},
        {"new": "ü & =", "k": "9"},
    ],
)
def test_a_tables_link_is_the_query_string_querydict_wrote(query, changes):
    params = QueryDict(query)
    assert _query(params, changes) == _as_querydict_wrote(params, changes)
