"""Server-rendered pages. Each view calls selectors to read and at most one service to write."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from evaluator.profiles import PROFILES
from leaderboard import selectors, services
from leaderboard.forms import SubmissionForm


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"categories": selectors.problem_list_by_category()})


def problem_detail(request: HttpRequest, problem_id: str) -> HttpResponse:
    problem = selectors.problem_detail(problem_id=problem_id)
    profile = selectors.problem_default_profile(problem=problem, preferred=request.GET.get("profile"))
    ranking = selectors.problem_ranking(problem=problem, profile=profile) if profile else []
    chart = {
        "labels": [e.username for e in ranking],
        "speedups": [e.speedup for e in ranking],
        "submissions": [e.submission_id for e in ranking],
        "profile": profile,
    }
    return render(request, "leaderboard/problem_detail.html", {
        "problem": problem,
        "profile": PROFILES.get(profile) if profile else None,
        "profiles": [PROFILES[name] for name in problem.supported_profiles],
        "ranking": ranking,
        "chart": chart,
    })


@login_required
def submission_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SubmissionForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data.get("file")
            try:
                if upload is not None:
                    source = services.upload_read(upload)
                    filename = upload.name
                else:
                    source, filename = form.cleaned_data["source"], "solution.py"
                submission = services.submission_create(
                    user=request.user, problem=form.cleaned_data["problem"], profile=form.cleaned_data["profile"],
                    filename=filename, source=source,
                )
            except ValidationError as exc:
                _form_errors_from(form, exc)
            else:
                return redirect("submission-detail", submission_id=submission.pk)
        status = 400
    else:
        initial = {k: request.GET[k] for k in ("problem", "profile") if k in request.GET}
        form, status = SubmissionForm(initial=initial), 200
    return render(request, "leaderboard/submission_form.html", {"form": form}, status=status)


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
    submission = selectors.submission_detail(submission_id=submission_id)
    result = getattr(submission, "result", None)
    return render(request, "leaderboard/submission_detail.html", {
        "submission": submission,
        "result": result,
        "document": result.document if result else None,
        "show_source": selectors.submission_source_visible(submission=submission, user=request.user),
        "refresh_s": None if submission.is_done else 3,
        "queue": selectors.submission_queue_status(submission=submission)
        if submission.state == submission.State.QUEUED else None,
    })


@login_required
def submission_list(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/submission_list.html",
                  {"submissions": selectors.submission_list(user=request.user)[:200]})
