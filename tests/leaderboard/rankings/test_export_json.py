"""A JSON export is written as ``json.dumps({**head, "rows": [...]}, indent=1, default=str)`` writes it: each row by
``export_stream.indented_json`` (scalars by the C encoder) is that text, for every kind of value a row holds."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.rankings import run_rows, run_selectors, run_tables
from leaderboard.rankings.export_stream import indented_json, json_lines

AWKWARD = {
    "empty": {},
    "none": [],
    "nested": [1, [2, []], {"b": None, "c": 'x\ny "q" \u2603'}],
    "float": 1.0000000001,
    "nan": float("nan"),
    "inf": float("-inf"),
    "bool": True,
    "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
    "decimal": Decimal("1.50"),
    "tuple": (1, "a"),
    "pair": [0.1, 1.0],
    "scalars": [0.5, float("nan"), float("inf"), True, False, None, "x\n\u2603", 2, -0.0, Decimal("1.5")],
    "é": "\u00e9",
}


def _as_json_wrote(value) -> str:
    return textwrap.indent(json.dumps(value, indent=1, default=str), "  ")


# the same keys at several depths and again (their written openings are kept by depth), keys that equal an int's
SAME_KEYS = {"a": {"a": {"a": 1}, "b": [{"a": 2}]}, "b": [{"a": {"a": None}}], "1": 1}
NUMBER_KEYS = {1: "an int key", "a": 2}


@pytest.mark.parametrize(
    "value",
    [AWKWARD, {}, [], [AWKWARD, AWKWARD], NUMBER_KEYS, "text", 3.5, None, SAME_KEYS, [SAME_KEYS, NUMBER_KEYS]],
)
def test_a_value_is_written_as_json_dumps_with_an_indent_of_one_writes_it(value):
    assert "  " + indented_json(value, "\n  ") == _as_json_wrote(value)


@pytest.mark.django_db
def test_the_json_export_of_the_ranking_is_the_text_json_dumps_wrote():
    seed_demo(runs=12, problems=6, attempts=2, users=3, seed=3, log=lambda _: None)
    table = run_tables.run_ranking_table()
    records = [table.record(r) for r in run_rows.run_rows(run_selectors.model_run_ranking())]
    assert len(records) == 12
    head = {"table": "runs", "filters": {"mode": "agentic"}, "page": 1, "per_page": 100, "next": None}
    assert "".join(json_lines(head, records)) == json.dumps({**head, "rows": records}, indent=1, default=str)
    assert "".join(json_lines(head, [])) == json.dumps({**head, "rows": []}, indent=1, default=str)
