"""The home page's line for each category (``overview.CategorySummary``: its leader, best speedup and solutions),
built in Python: the same HTML the template wrote, byte for byte (``tests/leaderboard/web/test_row_html.py`` renders
both), each value escaped as the template escaped it (``row_html.text``)."""

from __future__ import annotations

from typing import Any, Callable

from django.template.defaultfilters import pluralize

from leaderboard.web.row_html import text


def category_summary(key: Any, summary: Any, problems_url: Any, times: Callable[[Any], str]) -> str:
    """The paragraph of one category (``key``: its key) over its summary, what the ``{% if summary %}`` block of
    ``templates/home.html`` wrote (``problems_url``: the problems' link prefix; ``times``: the ``times`` filter)."""
    if summary.leader:
        best = (
            f' on <a href="{text(problems_url)}{text(summary.best_problem_id)}/">{text(summary.best_problem_id)}</a>'
            if summary.best_problem_id
            else ""
        )
        line = (
            f'Leader: <strong class="leader">{text(summary.leader)}</strong> (first on '
            f"{text(summary.leader_firsts)} of {text(summary.problems)} problem{pluralize(summary.problems)})\n"
            f'      · best speedup <strong class="best-speedup">{text(times(summary.best_speedup))}</strong>{best}\n'
            f'      · <span class="solutions">{text(summary.solutions)}</span> ranked solution'
            f"{pluralize(summary.solutions)}"
        )
    elif summary.solutions:
        line = (
            f'<span class="solutions">{text(summary.solutions)}</span> passed solution{pluralize(summary.solutions)}, '
            "none timed on a GPU profile yet (CPU profiles only check the pipeline)"
        )
    else:
        line = '<span class="muted">No passed solution yet in this category.</span>'
    return f'\n    <p class="category-summary small" data-category="{text(key)}">\n      {line}\n    </p>\n    '
