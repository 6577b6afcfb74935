"""A person's page: their model runs and their best solution on each problem."""

from __future__ import annotations

import functools

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.rankings import problem_tables, run_rows, run_selectors, run_tables
from leaderboard.rankings import selectors as rankings
from leaderboard.web import cache  # cached_page: public read pages only, never on a page with private data


@cache.cached_page(scopes=cache.user_page_scopes)
def user_detail(request: HttpRequest, username: str) -> HttpResponse:
    person = rankings.user_by_username(username=username)
    runs_table, solutions_table = run_tables.run_ranking_table(), problem_tables.best_solutions_table()
    runs = run_selectors.model_run_ranking(user=person)
    # What the table's query of runs is built from (the table sorts it by ?sort=): its SQL is compiled once per
    # process for each (``rankings/prepared.py``).
    key = run_selectors.ranking_key(None, "user", person.pk, request.GET.get(runs_table.param("sort")))
    if runs_table.wants_export(request, main=True):  # (the runs only: their best solutions are not read)
        return runs_table.export(
            request,
            runs,
            filename=f"user-{person.get_username()}-runs",
            convert=functools.partial(run_rows.exported_run_rows, key=key),
        )
    solutions = rankings.user_best_solutions(user=person)
    if solutions_table.wants_export(request, main=False):
        return solutions_table.export(request, solutions, filename=f"user-{person.get_username()}-solutions")
    return render(
        request,
        "leaderboard/user_detail.html",
        {
            "person": person,
            "runs": runs_table.context(request, runs, convert=functools.partial(run_rows.shown_run_rows, key=key)),
            "solutions": solutions_table.context(request, solutions),
        },
    )
