"""The contribution pages: propose a problem, follow one's proposals, and (moderators) review them. Each view calls
selectors to read and at most one service to write."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.web.exports import exportable
from leaderboard.web.throttles import UploadThrottle, throttled
from leaderboard.web.permissions import upload_permission_required
from portal.contributions import exports, selectors, services
from portal.contributions.forms import PROBLEM_FILES, ProposalForm, ReviewForm


@login_required
@upload_permission_required
@throttled(UploadThrottle, what="uploads")
def proposal_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ProposalForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                proposal = services.proposal_create(
                    user=request.user,
                    category=form.cleaned_data["category"],
                    name=form.cleaned_data["name"],
                    problem_toml=form.file_or_text("problem_toml"),
                    reference_py=form.file_or_text("reference_py"),
                    readme_md=form.file_or_text("readme_md"),
                    known_answers=form.known_answers(),
                )
            except ValidationError as exc:
                _form_errors_from(form, exc)
            else:
                messages.success(request, f"Proposal #{proposal.pk} is stored; its check runs now.")
                return redirect("proposal-detail", proposal_id=proposal.pk)
        kept, status = form.keep_uploads(), 400  # nothing uploaded has to be given again
    else:
        form, status = ProposalForm(initial={k: request.GET[k] for k in ("category", "name") if k in request.GET}), 200
        kept = []
    groups = [(filename, form[f"{field}_file"], form[field]) for field, filename, _ in PROBLEM_FILES]
    return render(
        request,
        "contribute/proposal_form.html",
        {
            "form": form,
            "file_groups": groups,
            "kept": kept,
            "kept_answers": form.kept() if kept else [],
            "answer_fields": [form["correct"], form["correct_source"], form["wrong"], form["wrong_source"]],
        },
        status=status,
    )


def _form_errors_from(form: ProposalForm, exc: ValidationError) -> None:
    if not hasattr(exc, "error_dict"):
        for message in exc.messages:
            form.add_error(None, message)
        return
    for field, errors in exc.message_dict.items():
        target = field if field in form.fields else None
        if field in {f for f, _, _ in PROBLEM_FILES} and form.cleaned_data.get(f"{field}_file"):
            target = f"{field}_file"
        if field == "known_answers":
            target = None
        for message in errors:
            form.add_error(target, message)


@login_required
@exportable(exports.proposal_list_table, exports.proposal_rows, filename="proposals")
def proposal_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "contribute/proposal_list.html",
        {
            "proposals": selectors.proposal_list(user=request.user)[:200],
            "is_moderator": selectors.is_moderator(request.user),
        },
    )


@login_required
def proposal_detail(
    request: HttpRequest, proposal_id: int, review_form: ReviewForm | None = None, status: int = 200
) -> HttpResponse:
    proposal = selectors.proposal_detail(proposal_id=proposal_id, user=request.user)
    moderator = selectors.is_moderator(request.user)
    return render(
        request,
        "contribute/proposal_detail.html",
        {
            "proposal": proposal,
            "report": proposal.check_report,
            "files": [
                (name, text, lexer)
                for (name, text), lexer in zip(proposal.files.items(), ("toml", "python", "markdown"))
            ],
            "is_moderator": moderator,
            "review_form": review_form or (ReviewForm() if moderator and proposal.is_open else None),
            "folder": f"problems/{proposal.category}/{proposal.name}/",
            "refresh_s": 3 if proposal.is_checking else None,
        },
        status=status,
    )


@login_required
@require_POST
def proposal_review(request: HttpRequest, proposal_id: int) -> HttpResponse:
    if not selectors.is_moderator(request.user):
        raise PermissionDenied("Only moderators can accept or reject proposals.")
    selectors.proposal_detail(proposal_id=proposal_id, user=request.user)  # 404 when there is no such proposal
    form = ReviewForm(request.POST)
    if form.is_valid():
        try:
            proposal = services.proposal_review(
                proposal_id=proposal_id,
                moderator=request.user,
                decision=form.cleaned_data["decision"],
                note=form.cleaned_data["note"],
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for message in errors:
                    form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, f"Proposal #{proposal.pk} is {proposal.state}.")
            return redirect("proposal-detail", proposal_id=proposal.pk)
    return proposal_detail(request, proposal_id, review_form=form, status=400)


@login_required
@require_POST
def proposal_recheck(request: HttpRequest, proposal_id: int) -> HttpResponse:
    if not selectors.is_moderator(request.user):
        raise PermissionDenied("Only moderators can run a proposal's check again.")
    selectors.proposal_detail(proposal_id=proposal_id, user=request.user)  # 404 when there is no such proposal
    try:
        services.proposal_recheck(proposal_id=proposal_id, moderator=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, "The check runs again.")
    return redirect("proposal-detail", proposal_id=proposal_id)


@login_required
def proposal_download(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = selectors.proposal_detail(proposal_id=proposal_id, user=request.user)
    filename, data = selectors.proposal_archive(proposal=proposal)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def review_queue(request: HttpRequest) -> HttpResponse:
    if not selectors.is_moderator(request.user):
        raise PermissionDenied("The review queue is for moderators.")
    return render(
        request,
        "contribute/review_queue.html",
        {
            "proposals": selectors.proposal_review_queue(),
            "reviewed": selectors.proposal_recently_reviewed(),
        },
    )
