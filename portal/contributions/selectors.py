"""Every read of problem proposals: who may see and review them, the lists, and the accepted folder as a zip."""

from __future__ import annotations

import io
import zipfile

from django.db.models import QuerySet
from django.http import Http404

from portal.contributions.models import ProblemProposal

MODERATORS_GROUP = "moderators"
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)  # fixed, so the same proposal always gives the same bytes


def is_moderator(user) -> bool:
    """Staff, or members of the "moderators" group."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.groups.filter(name=MODERATORS_GROUP).exists()


def proposal_list(*, user) -> QuerySet[ProblemProposal]:
    """The user's own proposals, newest first."""
    return ProblemProposal.objects.filter(author=user).order_by("-created_at", "-pk")


def proposal_review_queue() -> QuerySet[ProblemProposal]:
    """Proposals waiting for a moderator, oldest first."""
    return (
        ProblemProposal.objects.filter(state__in=ProblemProposal.OPEN_STATES)
        .select_related("author")
        .order_by("created_at", "pk")
    )


def proposal_recently_reviewed(*, limit: int = 20) -> list[ProblemProposal]:
    return list(
        ProblemProposal.objects.exclude(state__in=ProblemProposal.OPEN_STATES)
        .select_related("author", "moderator")
        .order_by("-reviewed_at", "-pk")[:limit]
    )


def proposal_detail(*, proposal_id: int, user) -> ProblemProposal:
    """One proposal, for its author or a moderator; anyone else gets a 404 (proposals are not public)."""
    proposal = ProblemProposal.objects.select_related("author", "moderator").filter(pk=proposal_id).first()
    if proposal is None or not (user.is_authenticated and (proposal.author_id == user.pk or is_moderator(user))):
        raise Http404("No such proposal.")
    return proposal


def proposal_folder(*, proposal: ProblemProposal) -> dict[str, str]:
    """The problem folder as it goes into the repository: path under the repository root → text."""
    root = f"problems/{proposal.category}/{proposal.name}"
    files = {f"{root}/{name}": text for name, text in proposal.files.items()}
    for answer in proposal.solutions:
        files[f"{root}/solutions/{answer['kind']}/{answer['filename']}"] = answer["source"]
    return files


def proposal_archive(*, proposal: ProblemProposal) -> tuple[str, bytes]:
    """An accepted proposal's folder as a zip (``problems/<category>/<name>/...``): the file name and its bytes.
    Unzipped at the repository root, it is the folder to merge by pull request."""
    if proposal.state != ProblemProposal.State.ACCEPTED:
        raise Http404("Only an accepted proposal can be downloaded.")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, text in sorted(proposal_folder(proposal=proposal).items()):
            info = zipfile.ZipInfo(path, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text.encode("utf-8"))
    return f"{proposal.category}-{proposal.name}-v{proposal.version}.zip", buffer.getvalue()
