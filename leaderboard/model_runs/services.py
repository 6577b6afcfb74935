"""The write of a model run: ``model_run_create`` validates an archive whole (``layout.read_archive``, then the
checks a single upload gets, each message naming the attempt's file), then stores the run, one submission per
attempt (each queued the way a single upload is, ``submissions.queueing``) and its trajectories in one transaction.
A run's scores and progress are kept by ``rankings.services.run_score_refresh`` as its attempts settle.
"""

from __future__ import annotations

import hashlib
import posixpath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from evaluator.contract import states
from leaderboard import formats
from leaderboard.model_runs.container import MAX_PROBLEMS_LISTED, ArchiveError
from leaderboard.model_runs.layout import read_archive
from leaderboard.models import ModelRun, Problem, Submission, Trajectory
from leaderboard.names import invisible_character
from leaderboard.rankings import generations, scores
from leaderboard.rankings.services import run_score_refresh
from leaderboard.rankings.standing import current_suite_version
from leaderboard.submissions import queueing, validation
from leaderboard.submissions import services as submission_services


def archive_upload_read(upload) -> bytes:
    """The bytes of an uploaded archive, refusing one over the size limit without reading it all."""
    limit = settings.ARENA_MAX_ARCHIVE_BYTES
    if upload.size is not None and upload.size > limit:
        raise ValidationError(
            {
                "archive": f"{upload.name}: {formats.size(upload.size)} is more than the "
                f"{formats.size(limit)} an "
                f"upload may be; trim the trajectories (they are optional) or split the "
                f"run."
            }
        )
    return upload.read(limit + 1)


def _archive_refusal(problems: list[str]) -> ValidationError:
    shown = problems[:MAX_PROBLEMS_LISTED]
    if len(problems) > len(shown):
        shown.append(f"… and {len(problems) - len(shown)} more problems.")
    return ValidationError({"archive": shown})


def model_run_create(*, user, filename: str | None, data: bytes, is_demo: bool = False) -> ModelRun:
    """Validates a model-run archive whole, then stores the run, one submission per attempt (each enqueued on
    the run's hardware profile queue after the commit, as ``submission_create`` does) and its trajectories, in
    one transaction.

    Raises ValidationError({"archive": [every problem found, each naming the file and field]}): nothing is
    stored and nothing queued unless the whole archive is good.
    """
    name = posixpath.basename((filename or "").replace("\\", "/")).strip()[:255] or "model-run"
    bad = invisible_character(name)
    if bad:
        raise ValidationError({"archive": f"The archive's file name holds {bad}; rename it, e.g. to run.zip."})
    if len(data) > settings.ARENA_MAX_ARCHIVE_BYTES:
        raise ValidationError(
            {
                "archive": f"{name}: {formats.size(len(data))} is more than the "
                f"{formats.size(settings.ARENA_MAX_ARCHIVE_BYTES)} an upload may be; trim "
                f"the trajectories (they are optional) or split the run."
            }
        )
    known = {p.pk: p for p in Problem.objects.all()}
    try:
        parsed = read_archive(
            data,
            name,
            known,
            max_bytes=settings.ARENA_MAX_ARCHIVE_BYTES,
            max_attempt_bytes=settings.ARENA_MAX_SOURCE_BYTES,
        )
    except ArchiveError as exc:
        raise _archive_refusal(exc.problems) from None
    manifest = parsed.manifest

    # The same checks a solo upload gets, each message naming the attempt's file.
    problems: list[str] = []
    texts: dict[tuple[str, int], str] = {}
    for attempt in parsed.attempts:
        try:
            validation.profile_check(known[attempt.problem_id], manifest.hardware)
            texts[attempt.problem_id, attempt.index] = validation.source_validate(attempt.source)
        except ValidationError as exc:
            problems.extend(f"{attempt.filename}: {m}" for m in exc.messages)
    if problems:
        raise _archive_refusal(problems)

    digest = hashlib.sha256(data).hexdigest()
    earlier = ModelRun.objects.filter(user=user, archive_sha256=digest).values_list("pk", flat=True).first()
    if earlier is not None and not is_demo:
        raise ValidationError(
            {
                "archive": f"{name}: you uploaded this very archive already, as model run "
                f"#{earlier}; its results are on that run's page."
            }
        )

    with transaction.atomic():
        submission_services.user_lock(user)  # the limits are counted under the user's row lock
        pending = ModelRun.objects.filter(user=user, state__in=states.PENDING_STATES).count()
        if pending >= settings.ARENA_MAX_PENDING_RUNS_PER_USER:
            raise ValidationError(
                f"You already have {pending} model runs being evaluated; the limit is "
                f"{settings.ARENA_MAX_PENDING_RUNS_PER_USER}. Upload this one when one has finished."
            )
        submission_services.evaluation_budget_check(user, len(parsed.attempts))
        run = ModelRun.objects.create(
            user=user,
            model=manifest.model,
            provider=manifest.provider,
            mode=manifest.protocol,
            k=manifest.k,
            turn_budget=manifest.turn_budget,
            tokens=manifest.tokens,
            wall_time_s=manifest.wall_time_s,
            protocol_label=scores.stored_protocol_label(manifest.as_protocol()),
            profile=manifest.hardware,
            precision=manifest.precision or "",
            suite=manifest.suite,
            suite_version=manifest.suite_version or current_suite_version(manifest.suite) or "",
            run_date=manifest.date,
            open_weights=manifest.open_weights,
            notes=manifest.notes,
            manifest=manifest.as_dict(),
            archive_name=name,
            archive_sha256=digest,
            is_demo=is_demo,
            attempts_total=len(parsed.attempts),
        )
        rows = Submission.objects.bulk_create(
            [
                queueing.submission_row(
                    user=user,
                    problem=known[a.problem_id],
                    profile=manifest.hardware,
                    filename=posixpath.basename(a.filename),
                    text=texts[a.problem_id, a.index],
                    model_run=run,
                    attempt=a.index,
                )
                for a in parsed.attempts
            ]
        )
        by_attempt = {(s.problem_id, s.attempt): s for s in rows}
        Trajectory.objects.bulk_create(
            [
                Trajectory(
                    submission=by_attempt[t.problem_id, t.index],
                    filename=t.filename,
                    format=t.format,
                    content=t.text.replace("\x00", "\\0"),
                    size=len(t.text.encode("utf-8")),
                )
                for t in parsed.trajectories
            ]
        )
        for submission in rows:
            queueing.enqueue_after_commit(submission)
        run_score_refresh(model_run_id=run.pk)
        generations.rankings_changed(generations.RUN_LIST)  # the comparison offers every run
    run.refresh_from_db()
    return run
