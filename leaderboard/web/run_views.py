"""The pages of model runs: the overall ranking, uploading a run, one run's page, publishing it and comparing two runs.
Each view calls selectors to read and at most one service to write."""

from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.html import json_script
from django.views.decorators.http import require_POST

from leaderboard.catalogue import selectors as catalogue
from leaderboard.model_runs import services as model_runs
from leaderboard.rankings import comparison as comparisons
from leaderboard.rankings import metrics, overview, run_rows, run_selectors, run_tables, scores, tables
from leaderboard.rankings import services as rank_services
from leaderboard.rankings.memo import Memo
from leaderboard.submissions import publishing, queues
from leaderboard.web import (
    cache,  # cached_page: public read pages only, never on a page with private data
    exports,
    links,
)
from leaderboard.web.forms import ModelRunForm, form_errors_from, published_flag
from leaderboard.web.permissions import upload_permission_required
from leaderboard.web.throttles import UploadThrottle, throttled

# --- model runs -----------------------------------------------------------------------------------------


@cache.cached_page(scopes=cache.ranking_scopes)
def model_run_list(request: HttpRequest) -> HttpResponse:
    """The overall ranking of model runs, filtered by hardware, precision, protocol and k."""
    filters = run_selectors.model_run_filters(request.GET or None)
    table = run_tables.run_ranking_table()
    sort = request.GET.get("sort")
    runs = run_selectors.model_run_ranking(
        filters=filters, standing=run_selectors.RANKED, sort=sort or run_tables.RUN_DEFAULT_SORT
    )
    unranked_table = run_tables.run_ranking_table(
        prefix="unranked_", name="unranked", per_page=run_tables.UNRANKED_PER_PAGE
    )
    unranked_sort = request.GET.get("unranked_sort")
    unranked = run_selectors.model_run_ranking(
        filters=filters, standing=run_selectors.UNRANKED, sort=unranked_sort or "-created"
    )
    # What each table's queries are built from (the tables sort by the same ?sort= again): their SQL is compiled
    # once per process for each (``rankings/prepared.py``).
    ranked_key = run_selectors.ranking_key(filters, run_selectors.RANKED, sort)
    unranked_key = run_selectors.ranking_key(filters, run_selectors.UNRANKED, unranked_sort)
    if table.wants_export(request, main=True):
        return table.export(
            request,
            runs,
            filename="model-runs",
            meta={"filters": filters.active()},
            convert=functools.partial(run_rows.exported_run_rows, key=ranked_key),
        )
    if unranked_table.wants_export(request, main=False):
        return unranked_table.export(
            request,
            unranked,
            filename="model-runs-unranked",
            meta={"filters": filters.active()},
            convert=functools.partial(run_rows.exported_run_rows, key=unranked_key),
        )
    pareto = _pareto_chart(overview.cost_rows(runs, limit=overview.PARETO_RUNS, key=ranked_key))
    # Both tables are pages read from the database; their counts and the sorted ends of every ranked interval, which
    # the page's rank ranges come from, are one row stored at ingest for these filters (aggregating every run's
    # interval per request cost PostgreSQL 1.0 ms at 100 runs and 6.3 ms at 1,000).
    ranked_count, unranked_count, ends = run_selectors.model_run_page_standing(filters=filters, sort=sort)
    ranked_context = table.context(
        request, runs, count=ranked_count, convert=functools.partial(run_rows.shown_run_rows, key=ranked_key)
    )
    run_selectors.set_rank_ranges(rows=ranked_context["rows"], ends=ends)
    return render(
        request,
        "leaderboard/model_run_list.html",
        {
            "form": filters.form,
            "table": ranked_context,
            # (none to list: the pager counts them itself, so the page makes the same number of queries either way)
            "unranked": unranked_table.context(
                request,
                unranked,
                count=unranked_count or None,
                convert=functools.partial(run_rows.shown_run_rows, key=unranked_key),
            ),
            "rank_metric": run_selectors.rank_metric(sort),
            **links.url_prefixes(),
            "pareto": pareto,
        },
    )


# The score-against-cost chart's data as the page writes it, kept per process for the runs it draws (``cost_rows``:
# everything it is computed from), like the ranking's rows: a result that changes no drawn run's cost or pass@k
# leaves it as it was.
_PARETO_CHARTS = Memo(256)


def _pareto_chart(rows: tuple[overview.CostRow, ...]) -> dict | None:
    """The ranking page's score-against-cost chart: how many runs it draws at most and its data, written as the
    ``<script type="application/json">`` the page's chart reads (None: no scored run to draw)."""
    if not rows:
        return None

    def script() -> str:
        points = {"points": overview.cost_point_records(rows), "limit": overview.PARETO_RUNS}
        return json_script(points, "pareto-data")

    return {"limit": overview.PARETO_RUNS, "script": _PARETO_CHARTS.get_or_build(rows, script)}


@login_required
@upload_permission_required
@throttled(UploadThrottle, what="uploads")
def model_run_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ModelRunForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["archive"]
            try:
                run = model_runs.model_run_create(
                    user=request.user, filename=upload.name, data=model_runs.archive_upload_read(upload)
                )
            except ValidationError as exc:
                form_errors_from(form, exc)
            else:
                return redirect("model-run-detail", run_id=run.pk)
        status = 400
    else:
        form, status = ModelRunForm(), 200
    return render(
        request, "leaderboard/model_run_form.html", {"form": form, "queues": queues.queue_overview()}, status=status
    )


@cache.cached_page(scopes=cache.run_page_scopes)
def model_run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_selectors.model_run_detail(run_id=run_id)
    attempts = run_selectors.model_run_attempts(run=run)
    # As scored at ingest. A run whose row holds no whole score (written before scores were stored whole, until
    # `rebuild_standings --runs`) shows none rather than be scored here: a request never bootstraps.
    stored = scores.stored_score(run)
    score = stored or scores.unscored(run)
    grid = run_selectors.model_run_grid(run=run, attempts=attempts if stored else [], score=score)
    # the suite's category order, as on the comparison page
    categories = sorted(score.by_category.items(), key=lambda item: catalogue.category_order(item[0]))
    exports = {
        "problems": (run_tables.run_problems_table(), grid),
        "attempts": (run_tables.run_attempts_table(profile=run.profile), attempts),
        "categories": (run_tables.run_categories_table(), categories),
    }
    for name, (table, rows) in exports.items():
        if table.wants_export(request, main=name == "problems"):
            return table.export(
                request,
                rows,
                filename=f"model-run-{run.pk}-{name}",
                meta={
                    "model_run": run.pk,
                    "model": run.model,
                    **scores.protocol_fields(run),
                    "scored_at_k": score.k,
                    "speedup_note": metrics.speed_note(run.profile),
                },
            )
    problems = exports["problems"][0].context(request, grid)
    return render(
        request,
        "leaderboard/model_run_detail.html",
        {
            "run": run,
            "score": score,
            "standing": run.score.status if stored else "unfinished",
            "unscored": stored is None,
            "pass_at_1": getattr(getattr(run, "score", None), "pass_at_1", None),
            "protocol": score.label(),
            "coverage_total": score.overall.problems + len(score.not_scorable) + len(score.not_attempted),
            "problems": problems,
            "attempt_numbers": range(1, len(grid[0].cells) + 1) if grid else range(1, run.k + 1),
            "categories": exports["categories"][0].context(request, categories),
            "category_chart": {
                "categories": [c for c, _ in categories],
                "pass_at_k": [a.mean_pass_at_k for _, a in categories],
                "fast_1": [a.mean_fast_p_at_k.get(1.0) for _, a in categories],
                "fast_2": [a.mean_fast_p_at_k.get(2.0) for _, a in categories],
                "k": score.k,
            },
            "export": {fmt: f"?format={fmt}&table=attempts" for fmt in tables.EXPORT_FORMATS},
            "run_charts": _run_charts(run, grid, categories),
            "refresh_s": None if run.is_done else 3,
            **links.url_prefixes(),
        },
    )


def _run_charts(run, grid, categories) -> dict:
    """A run's per-problem best speedups, pass@k against k, fast_p against p and roofline fraction per category
    (the curves as stored at ingest; none before)."""
    curves = scores.stored_curves(run) or {"ks": [], "pass_at": [], "ps": [], "fast_at": [], "k": run.k}
    timed = [row for row in grid if row.score.best_speedup is not None]
    return {
        "problems": [row.problem_id for row in timed],
        "best_speedups": [row.score.best_speedup for row in timed],
        "ks": curves["ks"],
        "pass_at": curves["pass_at"],
        "pass_pairs": list(zip(curves["ks"], curves["pass_at"])),
        "ps": curves["ps"],
        "fast_at": curves["fast_at"],
        "k": curves["k"],
        "categories": [c for c, _ in categories],
        "roofline": [a.mean_roofline_fraction for _, a in categories],
    }


@login_required
@require_POST
def model_run_publish(request: HttpRequest, run_id: int) -> HttpResponse:
    published = published_flag(request)
    try:
        publishing.model_run_publish(run_id=run_id, user=request.user, published=published)
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Model run #{run_id} is published: anyone can read its attempts and trajectories."
            if published
            else f"Model run #{run_id} is private again.",
        )
    return redirect("model-run-detail", run_id=run_id)


@cache.cached_page(scopes=cache.comparison_scopes)
def model_run_compare(request: HttpRequest) -> HttpResponse:
    """Two runs side by side, both scored at the smaller of their ks."""
    refused = exports.unknown_format(request, tables=("problems", "summary", "categories"))
    if refused is not None:
        return refused
    chosen, problems = [], []
    for key in ("a", "b"):
        asked = request.GET.get(key, "").strip()
        try:
            value = int(asked.lstrip("#")) if asked else None
        except ValueError:
            value = None
            problems.append(f"{key.upper()}: {asked!r} is not a run number.")
        chosen.append(value)
    # The newest runs and the two asked for: a bounded picker, and whether those two exist, in one query.
    choices = run_selectors.model_run_choices(include=[v for v in chosen if v is not None and 0 < v < 2**63])
    ids = {pk for pk, _ in choices}
    for i, (key, value) in enumerate(zip(("a", "b"), list(chosen))):
        if value is not None and value not in ids:
            problems.append(
                f"{key.upper()}: there is no model run #{value} to compare (it does not exist, or it is private)."
            )
            chosen[i] = None
    if chosen[0] and chosen[0] == chosen[1]:
        problems.append(
            f"A and B are both run #{chosen[0]}: a run compared with itself differs in nothing. "
            "Choose two different runs."
        )
        chosen[1] = None
    comparison, computing = None, False
    if problems and request.GET.get("format") in exports.EXPORT_FORMATS:
        return HttpResponseBadRequest(" ".join(problems) + "\n", content_type="text/plain; charset=utf-8")
    if chosen[0] and chosen[1]:
        a, b = run_selectors.model_run_pair(a_id=chosen[0], b_id=chosen[1])
        comparison = comparisons.model_run_comparison(a=a, b=b)  # as the comparison job stored it
        if comparison is None:  # not computed for these scores yet: the web worker computes it, never this request
            rank_services.run_comparison_request(a=a, b=b)
            computing = True
    table = run_tables.comparison_table()
    if computing and table.wants_export(request, main=True):
        return exports.computing_export(retry_after_s=COMPUTING_REFRESH_S)
    if comparison is not None and table.wants_export(request, main=True):
        return table.export(
            request,
            comparison.rows,
            filename=f"compare-{chosen[0]}-{chosen[1]}",
            meta={
                "k": comparison.k,
                "a": {
                    "model_run": comparison.a.pk,
                    "model": comparison.a.model,
                    **scores.protocol_fields(comparison.a),
                    "scores": scores.overall(comparison.a_score),
                },
                "b": {
                    "model_run": comparison.b.pk,
                    "model": comparison.b.model,
                    **scores.protocol_fields(comparison.b),
                    "scores": scores.overall(comparison.b_score),
                },
            },
        )
    context = {
        "choices": choices,
        "picker_limit": run_selectors.COMPARE_CHOICES,
        "a_id": chosen[0],
        "b_id": chosen[1],
        "comparison": comparison,
        "computing": computing,
        "refresh_s": COMPUTING_REFRESH_S if computing else None,
        "problems": problems,
    }
    if comparison is not None:
        a, b = comparison.a_score, comparison.b_score
        context.update(
            {
                "table": table.context(request, comparison.rows),
                "summary": [
                    ("pass@k", a.overall.mean_pass_at_k, b.overall.mean_pass_at_k, "percent"),
                    ("fast₁@k", a.overall.mean_fast_p_at_k[1.0], b.overall.mean_fast_p_at_k[1.0], "percent"),
                    ("fast₁.₅@k", a.overall.mean_fast_p_at_k[1.5], b.overall.mean_fast_p_at_k[1.5], "percent"),
                    ("fast₂@k", a.overall.mean_fast_p_at_k[2.0], b.overall.mean_fast_p_at_k[2.0], "percent"),
                    ("Geomean speedup", a.overall.geomean_speedup, b.overall.geomean_speedup, "times"),
                    (
                        "Mean roofline fraction",
                        a.overall.mean_roofline_fraction,
                        b.overall.mean_roofline_fraction,
                        "percent",
                    ),
                    ("Coverage", a.overall.coverage, b.overall.coverage, "percent"),
                ],
                "category_rows": [(c, a.by_category.get(c), b.by_category.get(c)) for c in comparison.categories],
                "chart": {
                    "categories": comparison.categories,
                    "a": [getattr(a.by_category.get(c), "mean_pass_at_k", None) for c in comparison.categories],
                    "b": [getattr(b.by_category.get(c), "mean_pass_at_k", None) for c in comparison.categories],
                    # fast_1@k beside pass@k (None on CPU profiles, where nothing is timed: those bars are left out)
                    "a_fast_1": [
                        (getattr(a.by_category.get(c), "mean_fast_p_at_k", None) or {}).get(1.0)
                        for c in comparison.categories
                    ],
                    "b_fast_1": [
                        (getattr(b.by_category.get(c), "mean_fast_p_at_k", None) or {}).get(1.0)
                        for c in comparison.categories
                    ],
                    "a_label": f"A: {comparison.a.model} (#{comparison.a.pk})",
                    "b_label": f"B: {comparison.b.model} (#{comparison.b.pk})",
                    "k": comparison.k,
                },
            }
        )
        # the page's other two tables export as the problem table does (?table=summary|categories&format=...)
        for extra, rows in (
            (exports.comparison_summary_table(), list(enumerate(context["summary"]))),
            (exports.comparison_category_table(), context["category_rows"]),
        ):
            if extra.wants_export(request, main=False):
                return extra.export(
                    request,
                    rows,
                    filename=f"compare-{chosen[0]}-{chosen[1]}-{extra.name}",
                    meta={"k": comparison.k, "a": comparison.a.pk, "b": comparison.b.pk},
                )
    response = render(request, "leaderboard/model_run_compare.html", context)
    if computing:
        add_never_cache_headers(response)  # the pages cache keeps no page that says "being computed"
    return response


COMPUTING_REFRESH_S = 2  # a comparison being computed: the page reloads itself after this
