"""Every write on problem proposals goes through here.

- ``proposal_create`` validates a proposed folder at once with the problem registry (in a temporary directory;
  nothing is stored when it is invalid), stores it as ``submitted`` and, once the transaction commits, enqueues
  its CPU check on the ``checks`` queue (``evaluator.contract.jobs.CHECK_PROPOSAL``);
- ``proposal_mark_checking`` and ``proposal_record_check`` store what the check worker reports (idempotent: a
  report for a job that is not the proposal's current one is ignored); a check's lifecycle is the one every kind of
  queued work has (``leaderboard.lifecycle``; :data:`CHECK` names a proposal's fields and its job);
- ``proposal_check_failed`` is the platform's failure of a check (its job was lost, or its worker died), reported by
  the reaper (``reaper.proposals_reap``): the check is queued again while it has attempts left
  (settings.ARENA_MAX_ENQUEUES) and the proposal ends ``failed`` after the last;
- ``proposal_review`` (accept or reject, with a note) and ``proposal_recheck`` are for moderators only.

Errors raised for people are ``django.core.exceptions.ValidationError`` keyed by the field at fault (``category``,
``name``, ``problem_toml``, ``reference_py``, ``readme_md``, ``known_answers``, ``decision``, ``note``) with a
message that names the file and the field; ``PermissionDenied`` when the user is not a moderator.
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from evaluator.contract.jobs import CHECK_PROPOSAL, CHECKS_QUEUE
from leaderboard import formats
from leaderboard.beyond_contract import CHECK_WORLD_SIZES, KINDS, SOLUTION_FILENAME, failed_report, write_folder
from leaderboard.lifecycle.queues import JobOrder
from leaderboard.lifecycle.signatures import nonce_for
from leaderboard.lifecycle.work import Work
from leaderboard.submissions.validation import source_validate
from portal.contributions.selectors import is_moderator
from portal.contributions.models import ProblemProposal
from problems.registry import CATEGORIES, PROBLEMS_ROOT, Problem, ProblemError, load_problem

logger = logging.getLogger(__name__)

CHECK_JOB_TIMEOUT_S = 240  # the reference, twice, and every known answer at two world sizes, on small sizes
NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
FILE_FIELDS = {"problem.toml": "problem_toml", "reference.py": "reference_py", "README.md": "readme_md"}
MAX_KNOWN_ANSWERS = 8


def _text(field: str, filename: str, data: Any) -> str:
    """One proposed file (text, bytes, or an upload) as text, or ValidationError({field: ...}) naming the file."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    if hasattr(data, "read"):  # an upload: refused by its declared size before reading, and never read past the limit
        if getattr(data, "size", None) and data.size > limit:
            raise ValidationError(
                {field: f"{filename} is {formats.size(data.size)}; the limit is {formats.size(limit)}."}
            )
        data = data.read(limit + 1)
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else (data or b"")
    if len(raw) > limit:
        raise ValidationError({field: f"{filename} is {formats.size(len(raw))}; the limit is {formats.size(limit)}."})
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                {
                    field: f"{filename} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                    f"{exc.start}); save it as UTF-8."
                }
            ) from None
    text = (data or "").removeprefix("\ufeff").replace("\r\n", "\n")
    if not text.strip():
        raise ValidationError({field: f"{filename} is empty; upload the file or paste its text."})
    if "\x00" in text:
        raise ValidationError({field: f"{filename} contains NUL bytes, so it is not text."})
    return text


def _known_answers(items: Iterable[tuple[str, str | None, Any]]) -> list[dict[str, str]]:
    """``(kind, filename, source)`` triples (source: text, bytes or an upload), validated, as stored:
    ``{"kind", "filename", "source"}``."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for kind, filename, source in items:
        if kind not in KINDS:
            raise ValidationError({"known_answers": f"{kind!r} is not a kind of known answer; use correct or wrong."})
        name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not SOLUTION_FILENAME.match(name):
            raise ValidationError(
                {
                    "known_answers": f"solutions/{kind}/{name or '(no name)'}: a known answer is a "
                    f"Python file named like flat_sum.py (letters, digits, _ . -)."
                }
            )
        if (kind, name) in seen:
            raise ValidationError({"known_answers": f"solutions/{kind}/{name} is given twice; rename one."})
        seen.add((kind, name))
        where = f"solutions/{kind}/{name}"
        try:
            text = source_validate(_text("known_answers", where, source))
        except ValidationError as exc:
            messages = exc.message_dict.get("source") or exc.message_dict.get("known_answers") or exc.messages
            raise ValidationError({"known_answers": f"{where}: {messages[0]}"}) from None
        out.append({"kind": kind, "filename": name, "source": text})
    if len(out) > MAX_KNOWN_ANSWERS:
        raise ValidationError(
            {
                "known_answers": f"{len(out)} known answers were given; the limit is "
                f"{MAX_KNOWN_ANSWERS}. Keep the one or two most telling of each kind."
            }
        )
    return out


def _field_of(message: str) -> str:
    """The form field a registry message is about: it names the file first."""
    head = message.split(":", 1)[0]
    for filename, field in FILE_FIELDS.items():
        if head.endswith(filename):
            return field
    for filename, field in FILE_FIELDS.items():
        if filename in message:
            return field
    return "problem_toml"


def proposal_validate(*, category: str, name: str, files: dict[str, str]) -> Problem:
    """Validates the three files as the folder ``problems/<category>/<name>/`` with the registry, in a temporary
    directory. Returns the registry's Problem (whose ``path`` no longer exists), or raises ValidationError."""
    if category not in CATEGORIES:
        raise ValidationError({"category": f"{category!r} is not a category; use one of {', '.join(CATEGORIES)}."})
    if not NAME.match(name or ""):
        raise ValidationError(
            {
                "name": f"{name!r} cannot name a problem folder: use 2–64 lower-case letters, digits "
                f"and underscores, starting with a letter (e.g. all_gather_matmul)."
            }
        )
    if (PROBLEMS_ROOT / category / name).exists():
        raise ValidationError(
            {
                "name": f"{category}/{name} is already in the catalogue. To change it, open a pull "
                f"request that edits its folder and bumps its version; or choose another name."
            }
        )
    with tempfile.TemporaryDirectory(prefix="arena-proposal-") as tmp:
        folder = write_folder(Path(tmp), category, name, files)
        try:
            problem = load_problem(folder, folder.parent.parent)
        except ProblemError as exc:
            raise ValidationError({_field_of(str(exc)): str(exc)}) from None
    if not any(w in problem.world_sizes for w in CHECK_WORLD_SIZES):
        raise ValidationError(
            {
                "problem_toml": f"problems/{category}/{name}/problem.toml: the field 'world_sizes' "
                f"is {list(problem.world_sizes)}; it must include "
                f"{' or '.join(map(str, CHECK_WORLD_SIZES))} so the reference can be "
                f"checked on CPU."
            }
        )
    return problem


def proposal_create(
    *,
    user,
    category: str,
    name: str,
    problem_toml: Any,
    reference_py: Any,
    readme_md: Any,
    known_answers: Iterable[tuple[str, str | None, Any]] = (),
) -> ProblemProposal:
    """Validates a proposed problem, stores it as ``submitted`` and enqueues its check after the commit.

    Each file is text, bytes or an uploaded file; ``known_answers`` are ``(kind, filename, source)`` with kind
    ``correct`` or ``wrong``. Raises ValidationError
    (nothing stored, nothing queued) when the folder breaks the problem contract.
    """
    category, name = (category or "").strip(), (name or "").strip()
    files = {
        filename: _text(FILE_FIELDS[filename], filename, data)
        for filename, data in (("problem.toml", problem_toml), ("reference.py", reference_py), ("README.md", readme_md))
    }
    solutions = _known_answers(known_answers)
    problem = proposal_validate(category=category, name=name, files=files)
    limit = settings.ARENA_MAX_OPEN_PROPOSALS_PER_USER
    if ProblemProposal.objects.filter(author=user, state__in=ProblemProposal.OPEN_STATES).count() >= limit:
        raise ValidationError(
            f"You already have {limit} proposals waiting for review. Wait for a moderator to "
            f"review them (or ask one to reject the ones you no longer need), then propose again."
        )
    with transaction.atomic():
        proposal = ProblemProposal.objects.create(
            author=user,
            category=category,
            name=name,
            title=problem.title,
            version=problem.version,
            problem_toml=files["problem.toml"],
            reference_py=files["reference.py"],
            readme_md=files["README.md"],
            solutions=solutions,
            content_hash=problem.content_hash,
        )
        CHECK.enqueue_after_commit(proposal)
    return proposal


def _orders(proposal: ProblemProposal) -> list[JobOrder]:
    # the nonce binds the check's signed replies to this job (leaderboard.lifecycle.signatures)
    return [
        JobOrder(
            queue=CHECKS_QUEUE,
            function=CHECK_PROPOSAL,
            args=(
                proposal.pk,
                proposal.category,
                proposal.name,
                proposal.files,
                proposal.solutions,
                nonce_for(proposal.check_job_id),
            ),
            timeout=CHECK_JOB_TIMEOUT_S,
            job_id=proposal.check_job_id,
            description=f"check of proposal #{proposal.pk}: {proposal.problem_id}",
        )
    ]


# A proposal check's lifecycle: job ids "proposal-<pk>-<check>", submitted → checking, retried like an evaluation.
CHECK: Work[ProblemProposal] = Work(
    model=ProblemProposal,
    name="proposal",
    job_prefix="proposal",
    waiting=ProblemProposal.State.SUBMITTED,
    running=ProblemProposal.State.CHECKING,
    orders=_orders,
    queue_of=lambda proposal: CHECKS_QUEUE,
    if_redis_fails="the reaper enqueues it anew",
    job_id_field="check_job_id",
    count_field="check_count",
    enqueued_at_field=None,
    worker_field="check_worker",
    worker_max=200,
    started_field=None,
    touched=("updated_at",),
    attempt_word="Check",
    every_word="one",
)


def proposal_mark_checking(*, proposal_id: int, job_id: str, worker: str = "") -> ProblemProposal | None:
    """The check worker started ``job_id``. Ignored unless it is the proposal's current check."""
    return CHECK.mark_running(row_id=proposal_id, job_id=job_id, worker=worker, started=None)


def proposal_record_check(*, proposal_id: int, job_id: str, report: dict) -> ProblemProposal | None:
    """Stores a check report: ``checked`` when it is ok, ``failed`` otherwise. Idempotent; a report of an older
    check, or one arriving after a moderator's decision, is ignored."""
    with transaction.atomic():
        proposal = ProblemProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None or proposal.check_job_id != job_id or not proposal.is_checking:
            return proposal
        proposal.check_report = report if isinstance(report, dict) else {"ok": False, "message": str(report)}
        proposal.state = (
            ProblemProposal.State.CHECKED if proposal.check_report.get("ok") is True else ProblemProposal.State.FAILED
        )
        proposal.checked_at = timezone.now()
        proposal.save(update_fields=["check_report", "state", "checked_at", "updated_at"])
    return proposal


def proposal_check_failed(*, proposal_id: int, job_id: str, message: str) -> str | None:
    """The platform failed the check ``job_id`` (lost, or its worker died): ``"requeued"`` when it is queued again,
    ``"failed"`` when that was its last attempt (the proposal ends ``failed`` with ``message``), None when the job is
    no longer the proposal's current check or the proposal is no longer being checked."""
    with transaction.atomic():
        proposal = ProblemProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None or proposal.check_job_id != job_id or not proposal.is_checking:
            return None
        outcome, message = CHECK.platform_failure(proposal, message)
        if outcome == "requeued":
            return "requeued"
    proposal_record_check(proposal_id=proposal_id, job_id=job_id, report=failed_report(message))
    return "failed"


def _moderator_required(user) -> None:
    if not is_moderator(user):
        raise PermissionDenied("Only moderators (staff, or members of the 'moderators' group) can review proposals.")


def proposal_review(*, proposal_id: int, moderator, decision: str, note: str = "") -> ProblemProposal:
    """A moderator accepts (only a ``checked`` proposal) or rejects (any open one; a note saying why is required).

    Accepting stores the decision only: the folder is downloaded as a zip and merged by pull request."""
    _moderator_required(moderator)
    note = (note or "").strip()
    with transaction.atomic():
        proposal = ProblemProposal.objects.select_for_update().get(pk=proposal_id)
        if not proposal.is_open:
            raise ValidationError({"decision": f"This proposal was already {proposal.state}."})
        if decision == "accept":
            if proposal.state != ProblemProposal.State.CHECKED:
                raise ValidationError(
                    {
                        "decision": f"Only a proposal that passed its check can be accepted; this one "
                        f"is {proposal.state}. Reject it with a note, or check it again."
                    }
                )
            proposal.state = ProblemProposal.State.ACCEPTED
        elif decision == "reject":
            if not note:
                raise ValidationError({"note": "Say why the proposal is rejected: the contributor reads this note."})
            proposal.state = ProblemProposal.State.REJECTED
        else:
            raise ValidationError({"decision": f"{decision!r} is not a decision; use accept or reject."})
        proposal.moderator, proposal.moderator_note, proposal.reviewed_at = moderator, note, timezone.now()
        proposal.save(update_fields=["state", "moderator", "moderator_note", "reviewed_at", "updated_at"])
    return proposal


def proposal_recheck(*, proposal_id: int, moderator) -> ProblemProposal:
    """A moderator runs an open proposal's check again (a lost job, a changed checker); the old report goes."""
    _moderator_required(moderator)
    with transaction.atomic():
        proposal = ProblemProposal.objects.select_for_update().get(pk=proposal_id)
        if not proposal.is_open:
            raise ValidationError({"decision": f"This proposal was already {proposal.state}; it is not checked again."})
        proposal.state, proposal.check_report, proposal.checked_at = ProblemProposal.State.SUBMITTED, None, None
        proposal.save(update_fields=["state", "check_report", "checked_at", "updated_at"])
        CHECK.enqueue_after_commit(proposal)
    return proposal
