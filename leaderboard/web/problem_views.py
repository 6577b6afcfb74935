"""The catalogue's pages: the home page (every problem by category, with its leaders) and a problem's page (its
statement, ranking, figures and best solutions). Each view calls selectors to read."""

from __future__ import annotations

import functools

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.contract.profiles import PROFILES
from leaderboard.catalogue import selectors as catalogue
from leaderboard.rankings import overview, problem_tables, ranking_rows
from leaderboard.rankings import selectors as rankings
from leaderboard.submissions import publishing
from leaderboard.web import (
    cache,  # cached_page: public read pages only, never on a page with private data
    exports,
    links,
    write_solution,
)


@cache.cached_page(scopes=cache.catalogue_scopes)
@exports.exportable(exports.problem_list_table, exports.problem_rows, filename="problems")
def home(request: HttpRequest) -> HttpResponse:
    """The catalogue by category, searched and filtered (``catalogue.filters.ProblemFilterSet``), with each
    category's leader, best speedup and number of solutions, and each problem's leader: all read from the standings
    kept at ingest (``rankings.services``), a fixed number of queries whatever the number of results."""
    # Rows of the columns shown, not model instances; unfiltered, the same read gives the filters their choices.
    filters, problems = catalogue.filtered_catalogue(request.GET or None)
    _, leaders = overview.stored_leaders(problems, catalogue.problem_default_profiles(problems))
    filtered = bool(filters.active())
    summaries = overview.category_lines(problems, leaders, whole_catalogue=not filtered)
    categories = catalogue.problems_by_category(problems)  # in the filters' order: category, then title
    return render(
        request,
        "home.html",
        {
            "categories": [(c, summaries.get(c.key)) for c in categories] if categories else [],
            "leaders": leaders,
            "search": filters.form,
            "filtered": filtered,
            "matches": len(problems),
            **links.url_prefixes(),
        },
    )


@cache.cached_page(scopes=cache.problem_page_scopes)
def problem_detail(request: HttpRequest, problem_id: str) -> HttpResponse:
    problem = catalogue.problem_detail(problem_id=problem_id)
    profile = catalogue.problem_default_profile(problem=problem, preferred=request.GET.get("profile"))
    published = request.GET.get("published") in ("1", "true", "yes")
    measured = rankings.problem_measurement(problem=problem, profile=profile, query=request.GET)
    # The ranking of every solution is read from its stored rows, paged by the database; only "published only"
    # (a filter of the evaluations before they are pooled) is ranked per request.
    ranking: QuerySet | list = (
        rankings.problem_ranking(
            problem=problem, profile=profile, published=True, version=measured.version, revision=measured.revision
        )
        if published and profile
        else ranking_rows.problem_ranking_rows(
            problem=problem, profile=profile, version=measured.version, revision=measured.revision
        )
    )
    table = problem_tables.problem_ranking_table()
    # (a page of the stored rows: its query compiled once per process for each ranking, sort and page)
    key = ranking_rows.ranking_key(
        problem=problem, profile=profile, version=measured.version, revision=measured.revision
    )
    sort = request.GET.get(table.param("sort"))
    convert = None if published else functools.partial(ranking_rows.ranking_entries, key=(*key, "sorted", sort))
    if table.wants_export(request, main=True):
        return table.export(
            request,
            ranking,
            filename=f"ranking-{problem.id.replace('/', '-')}-{profile}",
            meta={
                "problem": problem.id,
                "problem_version": measured.version,
                "profile": profile,
                "protocol_revision": measured.revision,
                "timed": measured.timed,
                "published_only": published,
            },
            convert=None if published else ranking_rows.ranking_entries_streamed,
        )
    speedups = measured.speedups  # (as stored at ingest: ``problem_speedups`` of the ranking shown)
    # (the stored ranking's rows are counted by its standing, read with the measurement)
    ranked = table.context(request, ranking, count=None if published else measured.solutions, convert=convert)
    count = ranked["page"].paginator.count
    first_rows = ranked["page"].number == 1 and not request.GET.get("sort") and len(ranked["rows"]) >= min(3, count)
    top = (
        list(ranking[:3])
        if published
        else ranked["rows"][:3]
        if first_rows
        else ranking_rows.ranking_entries(ranking[:3])
    )
    chart = (
        {
            "labels": [e.model or e.username for e in ranked["rows"]],
            "speedups": [e.speedup for e in ranked["rows"]],
            "submissions": [e.submission_id for e in ranked["rows"]],
            "profile": profile,
        }
        if measured.timed
        else None
    )
    return render(
        request,
        "leaderboard/problem_detail.html",
        {
            "problem": problem,
            "profile": PROFILES.get(profile) if profile else None,
            "profiles": [PROFILES[name] for name in problem.supported_profiles],
            "ranking_count": count,
            "table": ranked,
            "chart": chart,
            "baseline": rankings.problem_baseline(problem=problem, profile=profile) if profile else None,
            "speedups": speedups,
            "distribution": overview.speedup_distribution(speedups),
            "speedup_data": {"speedups": speedups, "profile": profile},
            "published_only": published,
            "measured": measured,
            "best_solutions": _best_solutions(top),
            "history": overview.problem_history_chart(
                problem=problem, profile=profile, published=published, measured=measured
            ),
            "write": write_solution.context(problem.id, suite=problem.suite),
            **links.url_prefixes(),  # (the best solutions' links: a prefix and an id, no reverse() each)
        },
    )


def _best_solutions(entries: list) -> list[dict]:
    """The top of the ranking with whether each one's code is published (readable and downloadable by anyone)."""
    published = publishing.published_submission_ids(ids=[e.submission_id for e in entries])
    return [{"entry": e, "published": e.submission_id in published} for e in entries]
