"""Server-rendered pages. Each view calls selectors to read and at most one service to write."""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from evaluator.contract.profiles import PROFILES
from leaderboard.catalogue import selectors as catalogue
from leaderboard.model_runs import services as model_runs
from leaderboard.rankings import comparison as comparisons
from leaderboard.rankings import metrics, overview, ranking_rows, scores, tables
from leaderboard.rankings import selectors as rankings
from leaderboard.rankings import services as rank_services
from leaderboard.submissions import selectors as submissions
from leaderboard.submissions import services as submission_services
from leaderboard.submissions import publishing, queues, validation
from leaderboard.web import cache  # cached_page: public read pages only, never on a page with private data
from leaderboard.web import exports, write_solution
from leaderboard.web.forms import ModelRunForm, SubmissionForm
from leaderboard.web.permissions import upload_permission_required
from leaderboard.web.throttles import UploadThrottle, throttled


# Fields of a problem the home page never shows (its statement and reference source are most of the row's bytes).
HOME_DEFERRED = ("statement", "reference_source", "presets", "tolerances", "roofline", "function")


@cache.cached_page(scopes=cache.catalogue_scopes)
@exports.exportable(exports.problem_list_table, exports.problem_rows, filename="problems")
def home(request: HttpRequest) -> HttpResponse:
    """The catalogue by category, searched and filtered (``catalogue.filters.ProblemFilterSet``), with each
    category's leader, best speedup and number of solutions, and each problem's leader: all read from the standings
    kept at ingest (``rankings.services``), a fixed number of queries whatever the number of results."""
    filters = catalogue.problem_filters(request.GET or None)
    listed = filters.qs.defer(*HOME_DEFERRED)  # the statement and reference are big and not shown here
    problems = list(listed)
    _, leaders = overview.stored_leaders(
        problems, {p.id: catalogue.problem_default_profile(problem=p) for p in problems}
    )
    filtered = bool(filters.active())
    summaries = overview.category_lines(problems, leaders, whole_catalogue=not filtered)
    categories = catalogue.problem_list_by_category(problems=listed)
    return render(
        request,
        "home.html",
        {
            "categories": [(c, summaries.get(c.key)) for c in categories] if categories else [],
            "leaders": leaders,
            "search": filters.form,
            "filtered": filtered,
            "matches": len(problems),
            **_url_prefixes(),
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
    convert = None if published else ranking_rows.ranking_entries
    table = tables.problem_ranking_table()
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
    speedups = (
        rankings.problem_speedups(
            problem=problem, profile=profile, version=measured.version, revision=measured.revision
        )
        if profile
        else []
    )
    ranked = table.context(request, ranking, convert=convert)
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
                problem=problem, profile=profile, published=published, choices=measured.choices
            ),
            "write": write_solution.context(problem.id),
        },
    )


def _best_solutions(entries: list) -> list[dict]:
    """The top of the ranking with whether each one's code is published (readable and downloadable by anyone)."""
    published = publishing.published_submission_ids(ids=[e.submission_id for e in entries])
    return [{"entry": e, "published": e.submission_id in published} for e in entries]


@login_required
@upload_permission_required
@throttled(UploadThrottle, what="uploads")
def submission_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SubmissionForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data.get("file")
            try:
                if upload is not None:
                    source = validation.upload_read(upload)
                    filename = upload.name
                else:
                    source, filename = form.cleaned_data["source"], "solution.py"
                submission = submission_services.submission_create(
                    user=request.user,
                    problem=form.cleaned_data["problem"],
                    profile=form.cleaned_data["profile"],
                    filename=filename,
                    source=source,
                )
            except ValidationError as exc:
                _form_errors_from(form, exc)
            else:
                return redirect("submission-detail", submission_id=submission.pk)
        status = 400
    else:
        initial = {k: request.GET[k] for k in ("problem", "profile") if k in request.GET}
        form, status = SubmissionForm(initial=initial), 200
    return render(
        request, "leaderboard/submission_form.html", {"form": form, "queues": queues.queue_overview()}, status=status
    )


def _form_errors_from(form: SubmissionForm, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            target = field if field in form.fields else None
            if field == "source" and form.cleaned_data.get("file"):
                target = "file"
            for message in errors:
                form.add_error(target, message)
    else:
        for message in exc.messages:
            form.add_error(None, message)


def submission_detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = submissions.submission_detail(submission_id=submission_id)
    result = getattr(submission, "result", None)
    show_source = submissions.submission_source_visible(submission=submission, user=request.user)
    return render(
        request,
        "leaderboard/submission_detail.html",
        {
            "submission": submission,
            "result": result,
            "document": submissions.submission_result_document(submission=submission, user=request.user),
            "sha256": submissions.submission_sha256_shown(submission=submission, user=request.user),
            "show_source": show_source,
            "can_cancel": submissions.submission_cancellable(submission=submission, user=request.user),
            "can_publish": submission.model_run_id is None
            and submissions.submission_owned(submission=submission, user=request.user),
            "max_attempts": settings.ARENA_MAX_ENQUEUES,
            "trajectories": submissions.submission_trajectories(submission=submission)
            if show_source and submission.model_run_id
            else [],
            "refresh_s": None if submission.is_done else 3,
            "queue": submissions.submission_queue_status(submission=submission)
            if submission.state == submission.State.QUEUED
            else None,
        },
    )


def submission_source(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The solution file as a download, for whoever may read it (its owner and staff; everyone once published)."""
    submission = submissions.submission_detail(submission_id=submission_id)
    if not submissions.submission_source_visible(submission=submission, user=request.user):
        raise Http404("No such published solution.")
    response = HttpResponse(submission.source, content_type="text/x-python; charset=utf-8")
    name = os.path.basename(submission.filename or "solution.py") or "solution.py"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _published_flag(request: HttpRequest) -> bool:
    return request.POST.get("published", "1") not in ("0", "false", "no")


@login_required
@require_POST
def submission_publish(request: HttpRequest, submission_id: int) -> HttpResponse:
    published = _published_flag(request)
    try:
        publishing.submission_publish(submission_id=submission_id, user=request.user, published=published)
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, " ".join(getattr(exc, "messages", None) or [str(exc)]))
    else:
        messages.success(
            request,
            f"Submission #{submission_id} is published: anyone can read and download its source."
            if published
            else f"Submission #{submission_id} is private again.",
        )
    return redirect("submission-detail", submission_id=submission_id)


@login_required
@require_POST
def model_run_publish(request: HttpRequest, run_id: int) -> HttpResponse:
    published = _published_flag(request)
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


def queue_overview(request: HttpRequest) -> HttpResponse:
    """Which profiles have live workers, how many jobs wait, how long an evaluation typically takes."""
    refused = exports.unknown_format(request, tables=("queues",))
    if refused is not None:
        return refused
    rows = queues.queue_overview()
    if request.GET.get("format") == "json":  # the shape `arena submit` and `arena test` read (evaluator/cli/client.py)
        return JsonResponse(
            {
                "queues": None
                if rows is None
                else [
                    {
                        "profile": q.profile,
                        "queue": q.queue,
                        "live_workers": q.workers,
                        "waiting": q.waiting,
                        "typical_s": q.typical_s,
                    }
                    for q in rows
                ]
            }
        )
    table = exports.queue_table()
    if table.wants_export(request, main=True):
        if rows is None:  # Redis cannot be read: say so rather than export an empty table
            return HttpResponse("The queue cannot be read right now.\n", status=503, content_type="text/plain")
        return table.export(request, rows, filename="queues")
    return render(request, "leaderboard/queues.html", {"queues": rows})


@login_required
@require_POST
def submission_cancel(request: HttpRequest, submission_id: int) -> HttpResponse:
    try:
        submission_services.submission_cancel(submission_id=submission_id, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Submission #{submission_id} was cancelled.")
    return redirect("submission-detail", submission_id=submission_id)


@login_required
@exports.exportable(exports.submission_list_table, exports.submission_rows, filename="submissions")
def submission_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "leaderboard/submission_list.html",
        {"submissions": submissions.submission_list(user=request.user)[:200]},
    )


# --- model runs -----------------------------------------------------------------------------------------


@cache.cached_page(scopes=cache.ranking_scopes)
def model_run_list(request: HttpRequest) -> HttpResponse:
    """The overall ranking of model runs, filtered by hardware, precision, protocol and k."""
    filters = rankings.model_run_filters(request.GET or None)
    table = tables.run_ranking_table()
    sort = request.GET.get("sort")
    runs = rankings.model_run_ranking(filters=filters, standing=rankings.RANKED, sort=sort or tables.RUN_DEFAULT_SORT)
    unranked_table = tables.run_ranking_table(prefix="unranked_", name="unranked")
    unranked = rankings.model_run_ranking(
        filters=filters, standing=rankings.UNRANKED, sort=request.GET.get("unranked_sort") or "-created"
    )
    if table.wants_export(request, main=True):
        return table.export(request, runs, filename="model-runs", meta={"filters": filters.active()})
    if unranked_table.wants_export(request, main=False):
        return unranked_table.export(
            request, unranked, filename="model-runs-unranked", meta={"filters": filters.active()}
        )
    points = overview.score_against_cost(runs, limit=overview.PARETO_RUNS)
    # Both tables are pages read from the database; one query counts the rows of both.
    ranked_count, unranked_count = rankings.model_run_standing_counts(runs=filters.qs)
    ranked_context = table.context(request, runs, count=ranked_count)
    # Every ranked run's interval is read (two floats a run, 4 ms of CPU at 1,000 runs): counting in SQL, for each
    # row of the page, the runs above and below it cost PostgreSQL three times as much at that size.
    ranges = rankings.model_run_rank_ranges(runs=runs, sort=sort)
    for run in ranked_context["rows"]:
        run.rank_range = ranges.get(run.pk)
    return render(
        request,
        "leaderboard/model_run_list.html",
        {
            "form": filters.form,
            "table": ranked_context,
            # (none to list: the pager counts them itself, so the page makes the same number of queries either way)
            "unranked": unranked_table.context(request, unranked, count=unranked_count or None),
            "rank_metric": rankings.rank_metric(sort),
            **_url_prefixes(),
            "pareto": {"points": [vars(p) for p in points], "limit": overview.PARETO_RUNS} if points else None,
        },
    )


def _url_prefixes() -> dict[str, str]:
    """URL prefixes for links in long tables (one reverse() per page instead of one per row)."""
    return {
        "runs_url": reverse("model-run-list"),
        "users_url": reverse("user-detail", args=["x"])[:-2],
        "submissions_url": reverse("submission-list"),
        "problems_url": reverse("problem-detail", args=["a/b"])[:-4],
    }


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
                _form_errors_from(form, exc)
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
    run = rankings.model_run_detail(run_id=run_id)
    attempts = rankings.model_run_attempts(run=run)
    # As scored at ingest. A run whose row holds no whole score (written before scores were stored whole, until
    # `rebuild_standings --runs`) shows none rather than be scored here: a request never bootstraps.
    stored = scores.stored_score(run)
    score = stored or scores.unscored(run)
    grid = rankings.model_run_grid(run=run, attempts=attempts if stored else [], score=score)
    # the suite's category order, as on the comparison page
    categories = sorted(score.by_category.items(), key=lambda item: catalogue.category_order(item[0]))
    exports = {
        "problems": (tables.run_problems_table(), grid),
        "attempts": (tables.run_attempts_table(profile=run.profile), attempts),
        "categories": (tables.run_categories_table(), categories),
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
            **_url_prefixes(),
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
    choices = rankings.model_run_choices(include=[v for v in chosen if v is not None and 0 < v < 2**63])
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
        a, b = rankings.model_run_detail(run_id=chosen[0]), rankings.model_run_detail(run_id=chosen[1])
        comparison = comparisons.model_run_comparison(a=a, b=b)  # as the comparison job stored it
        if comparison is None:  # not computed for these scores yet: the web worker computes it, never this request
            rank_services.run_comparison_request(a=a, b=b)
            computing = True
    table = tables.comparison_table()
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
        "picker_limit": rankings.COMPARE_CHOICES,
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


@cache.cached_page(scopes=cache.user_page_scopes)
def user_detail(request: HttpRequest, username: str) -> HttpResponse:
    person = rankings.user_by_username(username=username)
    runs_table, solutions_table = tables.run_ranking_table(), tables.best_solutions_table()
    runs = rankings.model_run_ranking(user=person)
    solutions = rankings.user_best_solutions(user=person)
    if runs_table.wants_export(request, main=True):
        return runs_table.export(request, runs, filename=f"user-{person.get_username()}-runs")
    if solutions_table.wants_export(request, main=False):
        return solutions_table.export(request, solutions, filename=f"user-{person.get_username()}-solutions")
    return render(
        request,
        "leaderboard/user_detail.html",
        {
            "person": person,
            "runs": runs_table.context(request, runs),
            "solutions": solutions_table.context(request, solutions),
        },
    )
