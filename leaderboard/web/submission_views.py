"""The pages of single solutions: upload one, follow it, read or download its source, publish or cancel it, list your
own, and the queues it waits in. Each view calls selectors to read and at most one service to write."""

from __future__ import annotations
import os
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from leaderboard.submissions import selectors as submissions
from leaderboard.submissions import services as submission_services
from leaderboard.submissions import publishing, queues, validation
from leaderboard.web import exports
from leaderboard.web.forms import SubmissionForm, form_errors_from, published_flag
from leaderboard.web.permissions import upload_permission_required
from leaderboard.web.throttles import UploadThrottle, throttled


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
                form_errors_from(form, exc)
            else:
                return redirect("submission-detail", submission_id=submission.pk)
        status = 400
    else:
        initial = {k: request.GET[k] for k in ("problem", "profile") if k in request.GET}
        form, status = SubmissionForm(initial=initial), 200
    return render(
        request, "leaderboard/submission_form.html", {"form": form, "queues": queues.queue_overview()}, status=status
    )


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


@login_required
@require_POST
def submission_publish(request: HttpRequest, submission_id: int) -> HttpResponse:
    published = published_flag(request)
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
