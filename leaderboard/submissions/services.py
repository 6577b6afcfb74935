"""Every write the leaderboard makes goes through here.

- ``problems_sync`` mirrors the problem registry into the database;
- ``submission_create`` validates an upload, saves it and, once the transaction commits, enqueues the evaluation
  on the queue of its hardware profile;
- ``submission_mark_running`` and ``result_record`` store what workers report (both idempotent);
- ``model_run_create`` validates a model-run archive whole, then stores the run and one submission per attempt
  in one transaction, each enqueued the way ``submission_create`` enqueues;
- ``run_score_refresh`` recomputes a run's progress and its RunScore row whenever one of its results lands;
- ``submissions_reap`` makes the database, the source of truth for what is queued, agree with Redis again.

Errors raised for people are ``django.core.exceptions.ValidationError`` keyed by the field at fault
(``problem``, ``profile``, ``source``) with a message that says what is wrong and what to do.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import math
import posixpath
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

import django_rq
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone
from redis.exceptions import RedisError
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from evaluator.contract.jobs import build_queue
from evaluator.pkb import solution_filename_ok
from evaluator.contract.build import needs_build
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict, empty_document, trim
from evaluator.contract.spec import DEFAULT_TIMEOUTS, EvalSpec
from leaderboard import archive
from leaderboard import cache
from leaderboard.models import ModelRun, Problem, Result, RunScore, Submission, Trajectory

logger = logging.getLogger(__name__)

EVALUATE_JOB = "evaluator.jobs.evaluate_job"
PREBUILD_JOB = "evaluator.jobs.prebuild_job"
VERDICTS = {v.value for v in Verdict}


# --- problems -------------------------------------------------------------------------------------------


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)


def _problem_fields(problem: Any) -> dict[str, Any]:
    """The columns of a Problem row, from a registry ``problems.registry.Problem``."""
    return {
        "title": problem.title,
        "category": problem.category,
        "summary": str(problem.extra.get("summary", "")),
        "version": problem.version,
        "content_hash": problem.content_hash,
        "statement": problem.statement,
        "reference_source": problem.reference_source,
        "codebase": problem.codebase,
        "function": problem.function,
        "world_sizes": list(problem.world_sizes),
        "presets": {name: {"dtype": p.dtype, "params": dict(p.params)} for name, p in problem.presets.items()},
        "tolerances": {d: {"atol": t.atol, "rtol": t.rtol} for d, t in problem.tolerances.items()},
        "roofline": dict(problem.roofline),
        "suite": problem.suite,
        "is_active": True,
    }


@transaction.atomic
def problems_sync(*, problems: dict[str, Any] | None = None) -> SyncReport:
    """Makes the Problem table match the registry. Idempotent: a second run changes nothing.

    Problems that left the registry are deactivated, never deleted: submissions point at them.
    """
    if problems is None:
        from problems.registry import catalogue

        problems = catalogue()
    report = SyncReport()
    existing = {p.pk: p for p in Problem.objects.select_for_update()}
    for problem_id, problem in sorted(problems.items()):
        values = _problem_fields(problem)
        row = existing.get(problem_id)
        if row is None:
            Problem.objects.create(id=problem_id, **values)
            report.created.append(problem_id)
        elif any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            row.save()
            report.updated.append(problem_id)
        else:
            report.unchanged.append(problem_id)
    for problem_id, row in existing.items():
        if row.suite == "demo":
            continue  # made up by `manage.py seed_demo`, never in a registry: not for this sync to retire
        if problem_id not in problems and row.is_active:
            row.is_active = False
            row.save(update_fields=["is_active", "updated_at"])
            report.deactivated.append(problem_id)
    if report.created or report.updated or report.deactivated:
        cache.rankings_changed()
    return report


# --- submissions ----------------------------------------------------------------------------------------


def job_timeout_s() -> int:
    """The RQ job's limit: about 1.2× the sum of the evaluator's phase limits, so the phases time out first."""
    return math.ceil(settings.ARENA_JOB_TIMEOUT_FACTOR * sum(DEFAULT_TIMEOUTS.values()))


def _kib(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} bytes"


def source_validate(source: str | bytes) -> str:
    """Returns the source as text, or raises ValidationError({'source': ...}) saying what to fix."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    raw = source if isinstance(source, bytes) else source.encode("utf-8", errors="surrogatepass")
    if len(raw) > limit:
        raise ValidationError({"source": f"The file is {_kib(len(raw))}; the limit is {_kib(limit)}. "
                                         f"Submit one Python file with just the solution."})
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError({"source": f"The file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                                             f"{exc.start}). Upload a Python source file saved as UTF-8."}) from None
        text = text.removeprefix("\ufeff")
    else:
        text = source
    if not text.strip():
        raise ValidationError({"source": "The solution is empty. Upload a Python file that defines `solution`."})
    if "\x00" in text:
        raise ValidationError({"source": "The file contains NUL bytes, so it is not Python source text. "
                                         "Upload the .py file itself, not a compiled or archived file."})
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        line = (exc.text or "").rstrip()
        shown = f": `{line.strip()}`" if line.strip() else ""
        raise ValidationError({"source": f"The file is not valid Python: {exc.msg} at {where}{shown}. "
                                         f"Fix it (run `python -m py_compile yourfile.py` to check) and submit again."}
                              ) from None
    except ValueError as exc:  # e.g. unpaired surrogates
        raise ValidationError({"source": f"The file cannot be parsed as Python: {exc}."}) from None
    if not _defines_solution(tree):
        raise ValidationError({"source": "The file defines no top-level `solution`. A solution file must define "
                                         "`def solution(...)` at module level, with the same arguments as the "
                                         "problem's reference (see the problem page)."})
    return text


def upload_read(upload) -> bytes:
    """The bytes of an uploaded file, refusing one over the size limit without reading it all."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    if upload.size is not None and upload.size > limit:
        raise ValidationError({"source": f"The file is {_kib(upload.size)}; the limit is {_kib(limit)}. "
                                         f"Submit one Python file with just the solution."})
    return upload.read(limit + 1)


def _defines_solution(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "solution":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "solution" for t in node.targets):
            return True
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "solution":
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name) == "solution" for a in node.names):
            return True
    return False


def filename_clean(filename: str | None) -> str:
    name = posixpath.basename((filename or "").replace("\\", "/")).strip() or "solution.py"
    if not name.endswith(".py"):
        raise ValidationError({"source": f"{name!r} is not a Python file. Upload a single .py file "
                                         f"(rename it if it already holds Python source)."})
    if len(name) > 255 or any(ord(c) < 32 for c in name):
        raise ValidationError({"source": "The file name is too long or holds control characters; "
                                         "rename it, e.g. to solution.py."})
    return name


def _problem_resolve(problem: Problem | str) -> Problem:
    if isinstance(problem, Problem):
        return problem
    problem_id = (problem or "").strip().strip("/")
    row = Problem.objects.filter(pk=problem_id).first()
    if row is not None and not row.is_active:
        raise ValidationError({"problem": f"{problem_id} has been retired from the suite and takes no new "
                                          f"submissions. Pick an active problem from the home page."})
    if row is None:
        known = list(Problem.objects.filter(is_active=True).values_list("id", flat=True)[:6])
        hint = f" Known problems include {', '.join(known)}." if known else ""
        raise ValidationError({"problem": f"There is no problem {problem_id!r}.{hint} "
                                          f"Pick one from the list on the home page or GET /api/problems/."})
    return row


def _profile_check(problem: Problem, profile: str) -> None:
    if profile not in PROFILES:
        raise ValidationError({"profile": f"There is no hardware profile {profile!r}. "
                                          f"Choose one of {', '.join(PROFILES)}."})
    if not problem.supports(profile):
        world_size = PROFILES[profile].world_size
        fitting = problem.supported_profiles
        raise ValidationError({"profile": (
            f"{problem.id} runs on {', '.join(map(str, problem.world_sizes))} ranks, but {profile} has "
            f"{world_size}. Choose a profile with a supported world size"
            + (f": {', '.join(fitting)}." if fitting else ".")
        )})


def spec_for(submission: Submission) -> EvalSpec:
    """The self-contained spec a worker gets: ids and source, never ORM objects."""
    return EvalSpec(
        problem_id=submission.problem_id,
        solution_source=submission.source,
        profile=submission.profile,
        solution_name=submission.filename,
        problem_version=submission.problem_version,
        problem_hash=submission.problem_hash,
    )


def submission_create(*, user, problem: Problem | str, profile: str, filename: str | None,
                      source: str | bytes) -> Submission:
    """Validates an upload, stores it as ``queued`` and enqueues its evaluation after the commit.

    Raises ValidationError (nothing stored, nothing queued) when the upload cannot be evaluated.
    """
    problem = _problem_resolve(problem)
    _profile_check(problem, profile)
    name = filename_clean(filename)
    wrong_name = solution_filename_ok(problem.id, name)  # ParallelKernelBench file names for its imported suite
    if wrong_name:
        raise ValidationError({"source": wrong_name})
    text = source_validate(source)
    pending = Submission.objects.filter(user=user, state__in=[Submission.State.QUEUED, Submission.State.RUNNING],
                                        model_run__isnull=True)  # a model run's attempts have a limit of their own
    if pending.count() >= settings.ARENA_MAX_PENDING_PER_USER:
        raise ValidationError(f"You already have {settings.ARENA_MAX_PENDING_PER_USER} submissions waiting or "
                              f"running. Wait for some to finish, then submit again.")

    with transaction.atomic():
        submission = _submission_row(user=user, problem=problem, profile=profile, filename=name, text=text)
        submission.save()
        _enqueue_after_commit(submission)
    return submission


def _submission_row(*, user, problem: Problem, profile: str, filename: str, text: str,
                    model_run: ModelRun | None = None, attempt: int | None = None) -> Submission:
    """A new, unsaved submission of validated source: the one way a row to evaluate is made."""
    return Submission(
        user=user, problem=problem, profile=profile, problem_version=problem.version,
        problem_hash=problem.content_hash, filename=filename, source=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), job_timeout_s=job_timeout_s(),
        model_run=model_run, attempt=attempt,
    )


def _enqueue_after_commit(submission: Submission) -> None:
    """Gives the row its next job id now and puts the job on its queue once the transaction commits.

    If Redis is down at that moment the row stays ``queued`` with a job id Redis does not know, and the
    reaper enqueues it again later: the database decides what is queued.
    """
    submission.enqueue_count += 1
    submission.job_id = f"submission-{submission.pk}-{submission.enqueue_count}"
    submission.enqueued_at = timezone.now()
    submission.save(update_fields=["enqueue_count", "job_id", "enqueued_at"])
    spec = spec_for(submission).to_dict()
    submission_id, job_id, profile = submission.pk, submission.job_id, submission.profile
    description = f"submission #{submission.pk}: {submission.problem_id} on {profile}"
    timeout = submission.job_timeout_s

    prebuild = PROFILES[profile].device == "cuda" and needs_build(submission.source)

    def enqueue() -> None:
        try:
            if prebuild:
                # Compiles on the GPU host's CPUs while the GPU works through the jobs ahead of this one.
                Queue(build_queue(profile), connection=django_rq.get_connection("web")).enqueue(
                    PREBUILD_JOB, spec, job_timeout=900, result_ttl=settings.ARENA_JOB_RESULT_TTL_S,
                    description=f"build for {description}")
            django_rq.get_queue(PROFILES[profile].queue).enqueue(
                EVALUATE_JOB, spec, submission_id, job_id=job_id, job_timeout=timeout,
                result_ttl=settings.ARENA_JOB_RESULT_TTL_S, failure_ttl=settings.ARENA_JOB_RESULT_TTL_S,
                description=description,
            )
        except RedisError:
            logger.exception("could not enqueue submission %s; the reaper will retry", submission_id)

    transaction.on_commit(enqueue)


def _username(user_id: int) -> str:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first() or ""


def _submission_changed(submission: Submission) -> None:
    """The cached pages that show this submission (its problem's, its author's, its run's) are out of date."""
    cache.submission_changed(problem_id=submission.problem_id, username=_username(submission.user_id),
                             model_run_id=submission.model_run_id)


def _epoch_to_datetime(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(float(value), tz=dt_timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return timezone.now()


def submission_mark_running(*, submission_id: int, worker: str, started_at: float | datetime | None,
                            job_id: str | None = None) -> Submission | None:
    """A worker started the job. Only a queued row moves to running; a late or repeated message changes nothing
    (except filling in when and where a finished row ran, if its result arrived first), and neither does one from
    an attempt (``job_id``) that is no longer the current one."""
    started = started_at if isinstance(started_at, datetime) else _epoch_to_datetime(started_at)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("mark_running for unknown submission %s", submission_id)
            return None
        if job_id and submission.job_id and job_id != submission.job_id:
            return submission  # an attempt the reaper already replaced
        if submission.state == Submission.State.QUEUED:
            submission.state = Submission.State.RUNNING
            submission.started_at = started
            submission.heartbeat_at = started
            submission.worker = (worker or "")[:255]
            submission.save(update_fields=["state", "started_at", "heartbeat_at", "worker"])
            if submission.model_run_id is not None:
                ModelRun.objects.filter(pk=submission.model_run_id, state=ModelRun.State.QUEUED).update(
                    state=ModelRun.State.RUNNING)
            _submission_changed(submission)  # a run's page shows its attempts' state
        elif submission.state == Submission.State.FINISHED and submission.started_at is None:
            submission.started_at = started
            submission.worker = submission.worker or (worker or "")[:255]
            submission.save(update_fields=["started_at", "worker"])
    return submission


def _json_safe(value: Any) -> Any:
    """What a JSON column accepts: no NaN/inf (PostgreSQL refuses them), no NUL characters, only JSON types."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.replace("\x00", "\\0")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, dict):
        return {str(_json_safe(k)): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return _json_safe(str(value))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _ci(value: Any) -> tuple[float | None, float | None]:
    if isinstance(value, dict):
        return _number(value.get("low")), _number(value.get("high"))
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _number(value[0]), _number(value[1])
    return None, None


def _document_normalise(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        broken = empty_document()
        broken["verdict"] = Verdict.INFRA_ERROR.value
        broken["message"] = f"The worker sent a result that is not a JSON object ({type(document).__name__})."
        return broken
    document = _json_safe(document)
    if document.get("verdict") not in VERDICTS:
        document["message"] = (f"The worker sent an unknown verdict {document.get('verdict')!r}. "
                               + str(document.get("message") or ""))
        document["verdict"] = Verdict.INFRA_ERROR.value
    return document


def result_record(*, submission_id: int, document: Any, job_id: str | None = None) -> Result | None:
    """Stores a result document and finishes the submission. Idempotent: once a submission has a result, a
    second delivery (a retried job, the reaper recovering a return value) changes nothing.

    An ``infra_error`` (the platform failed, not the solution) does not finish a submission that has attempts
    left (settings.ARENA_MAX_ENQUEUES): the submission goes back to the queue as a new job and None is returned.
    ``job_id`` names the attempt that reported: an infra_error from an attempt that is no longer the current one
    changes nothing; a real verdict from any attempt is kept (the first result wins)."""
    document = _document_normalise(document)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("result for unknown submission %s dropped", submission_id)
            return None
        existing = Result.objects.filter(submission=submission).first()
        if existing is not None or submission.state == Submission.State.CANCELLED:
            return existing
        _submission_changed(submission)  # a verdict lands, or the attempt goes back to the queue
        if _attempt_settled_without_result(submission, document, job_id):
            return None
        timing = document.get("timing") if isinstance(document.get("timing"), dict) else {}
        roofline = document.get("roofline") if isinstance(document.get("roofline"), dict) else {}
        problem = document.get("problem") if isinstance(document.get("problem"), dict) else {}
        baseline = timing.get("baseline") if isinstance(timing.get("baseline"), dict) else {}
        solution = timing.get("solution") if isinstance(timing.get("solution"), dict) else {}
        ci_low, ci_high = _ci(timing.get("speedup_ci"))
        version = problem.get("version")
        result = Result.objects.create(
            submission=submission,
            document=document,
            verdict=document["verdict"],
            speedup=_number(timing.get("speedup")),
            speedup_ci_low=ci_low,
            speedup_ci_high=ci_high,
            baseline_median_us=_number(baseline.get("median_us")),
            solution_median_us=_number(solution.get("median_us")),
            roofline_fraction=_number(roofline.get("solution_fraction")),
            problem_version=version if isinstance(version, int) and version > 0 else submission.problem_version,
            problem_hash=str(problem.get("content_hash") or problem.get("hash") or submission.problem_hash)[:64],
        )
        submission.state = Submission.State.FINISHED
        submission.verdict = result.verdict
        submission.finished_at = timezone.now()
        submission.save(update_fields=["state", "verdict", "finished_at"])
        if submission.model_run_id is not None:
            run_score_refresh(model_run_id=submission.model_run_id)
    return result


def _infra_error_document(submission: Submission, message: str) -> dict[str, Any]:
    document = empty_document()
    document["verdict"] = Verdict.INFRA_ERROR.value
    document["message"] = message
    document["problem"] = {"id": submission.problem_id, "version": submission.problem_version,
                           "content_hash": submission.problem_hash}
    document["profile"] = {"name": submission.profile}
    document["solution"] = {"name": submission.filename, "sha256": submission.sha256}
    return document


def submission_fail(*, submission_id: int, message: str, job_id: str | None = None) -> Result | None:
    """Reports an ``infra_error`` for the attempt ``job_id`` (default: the current one): the platform, not the
    solution, failed. Like a worker's infra_error, it re-enqueues the submission while it has attempts left and
    ends it as infra_error after the last; None when it was re-enqueued (or the attempt was already replaced)."""
    submission = Submission.objects.get(pk=submission_id)
    return result_record(submission_id=submission_id, document=_infra_error_document(submission, message),
                         job_id=job_id)


def _attempt_settled_without_result(submission: Submission, document: dict[str, Any], job_id: str | None) -> bool:
    """Called by result_record with the row locked. True when the report ends here without a Result: an infra_error
    from a replaced attempt (ignored), or one with attempts left (the submission is queued again as a new job).
    Wrong answers, timeouts and every other verdict of the solution are never retried."""
    stale = bool(job_id and submission.job_id and job_id != submission.job_id)
    if document.get("verdict") != Verdict.INFRA_ERROR.value:
        if stale:  # a replaced attempt finished after all: keep its verdict, drop the attempt now queued
            _job_discard_after_commit(submission.profile, submission.job_id)
        return False
    if stale:
        logger.warning("submission %s: infra_error from replaced attempt %s ignored (current: %s)",
                       submission.pk, job_id, submission.job_id)
        return True
    attempts = submission.enqueue_count
    if attempts >= settings.ARENA_MAX_ENQUEUES:
        if attempts > 1:
            document["message"] = (f"{document.get('message') or 'The platform failed.'} "
                                   f"(Attempt {attempts} of {settings.ARENA_MAX_ENQUEUES}: every attempt failed on the "
                                   f"platform's side.)")
        return False
    logger.warning("submission %s: attempt %s failed on the platform's side (%s); enqueueing attempt %s",
                   submission.pk, attempts, trim(str(document.get("message") or ""), 300), attempts + 1)
    submission.state = Submission.State.QUEUED
    submission.worker = ""
    submission.started_at = submission.heartbeat_at = None
    submission.save(update_fields=["state", "worker", "started_at", "heartbeat_at"])
    _enqueue_after_commit(submission)
    return True


def _job_discard_after_commit(profile: str, job_id: str) -> None:
    """Takes a job that is no longer wanted off its queue once the transaction commits. A job a worker already
    started is left to finish (its report is then ignored): stopping it would kill the work horse but not the rank
    processes it started."""
    if not job_id or profile not in PROFILES:
        return

    def discard() -> None:
        try:
            job = Job.fetch(job_id, connection=django_rq.get_connection(PROFILES[profile].queue))
            if job.get_status() in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
                job.cancel()
        except (NoSuchJobError, RedisError, InvalidJobOperation):
            pass

    transaction.on_commit(discard)


def submission_cancel(*, submission_id: int, user) -> Submission:
    """The owner (or staff) stops a submission that is still queued or running. Its job leaves the queue; one a
    worker already started runs to its end and its result is dropped. Raises PermissionDenied for anyone else and
    ValidationError when the submission already ended."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            raise Http404(f"There is no submission #{submission_id}.")
        if not (user.is_authenticated and (user.pk == submission.user_id or user.is_staff)):
            raise PermissionDenied("Only the author of a submission can cancel it.")
        if submission.state == Submission.State.CANCELLED:
            return submission
        if submission.state == Submission.State.FINISHED:
            raise ValidationError(f"Submission #{submission.pk} already finished ({submission.verdict}); "
                                  f"there is nothing to cancel.")
        submission.state = Submission.State.CANCELLED
        submission.finished_at = timezone.now()
        submission.save(update_fields=["state", "finished_at"])
        _submission_changed(submission)
        _job_discard_after_commit(submission.profile, submission.job_id)
        if submission.model_run_id is not None:  # a cancelled attempt is done: the run's progress counts it
            run_score_refresh(model_run_id=submission.model_run_id)
    return submission


# --- the reaper -----------------------------------------------------------------------------------------
#
# The database says what should be queued or running; Redis says what is. The reaper compares the two for every
# unfinished submission and settles each disagreement as a platform failure of the current attempt (submission_fail):
# the submission is queued again as a new job while it has attempts left, and ends as infra_error after the last.
# Liveness comes from RQ's own worker heartbeat: while a worker runs a job it keeps pushing the job's entry in the
# queue's StartedJobRegistry into the future (a forking worker: every 30 s, to 60-90 s ahead) and stamps
# job.last_heartbeat; an entry left behind by the clock means the worker is gone. No extra traffic is needed.


@dataclass
class ReapReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    checked: int = 0

    def __str__(self) -> str:
        return (f"checked {self.checked}: re-enqueued {self.requeued or 'none'}, failed {self.failed or 'none'}, "
                f"recovered results of {self.recovered or 'none'}")


@dataclass
class _Redis:
    """What one reaper pass reads from Redis, once per queue."""

    waiting: dict[str, set[str]] = field(default_factory=dict)

    def queued_ids(self, queue_name: str) -> set[str]:
        if queue_name not in self.waiting:
            self.waiting[queue_name] = set(django_rq.get_queue(queue_name).get_job_ids())
        return self.waiting[queue_name]


PLATFORM_FAILURE = "This is a platform failure, not a verdict on your solution; submit it again later."


def _job(submission: Submission) -> Job | None:
    if not submission.job_id:
        return None
    try:
        return Job.fetch(submission.job_id, connection=django_rq.get_connection(PROFILES[submission.profile].queue))
    except NoSuchJobError:
        return None


def _job_failure(job: Job) -> str:
    latest = job.latest_result()
    text = (latest.exc_string if latest is not None else None) or ""
    last_line = text.strip().splitlines()[-1] if text.strip() else job.get_status(refresh=False) or "unknown"
    return trim(str(last_line), 500)


def _job_abandoned(job: Job, now: datetime) -> bool:
    """True when the worker running this started job stopped heartbeating: its StartedJobRegistry entry expired,
    or (no entry at all) its last heartbeat is older than the job's limit plus RQ's minute of slack."""
    registry = StartedJobRegistry(job.origin, connection=job.connection)
    if job.id in registry.get_expired_job_ids(now.timestamp()):
        return True
    if job.id in registry.get_job_ids(cleanup=False):
        return False
    last = job.last_heartbeat or job.started_at
    return last is None or now - last > timedelta(seconds=max(job.timeout or 0, 0) + 90)


def _attempt_failed(submission: Submission, message: str, report: ReapReport) -> None:
    """The current attempt failed on the platform's side: a new attempt, or infra_error after the last."""
    submission_fail(submission_id=submission.pk, message=f"{message} {PLATFORM_FAILURE}", job_id=submission.job_id)
    row = Submission.objects.filter(pk=submission.pk).values("state", "verdict", "job_id").first() or {}
    if row.get("state") == Submission.State.QUEUED and row.get("job_id") != submission.job_id:
        report.requeued.append(submission.pk)
    elif row.get("state") == Submission.State.FINISHED and row.get("verdict") == Verdict.INFRA_ERROR.value:
        report.failed.append(submission.pk)


def _where(submission: Submission, job: Job | None = None) -> str:
    worker = submission.worker or (job.worker_name if job is not None else "") or ""
    return f" on worker {worker}" if worker else ""


def _reap_ended_job(submission: Submission, job: Job, status: str, now: datetime, grace: timedelta,
                    report: ReapReport) -> None:
    """The job ended but the row did not: its reply was lost (recover the return value) or never sent."""
    if status == JobStatus.FINISHED:
        if job.ended_at and now - job.ended_at < grace:
            return  # its reply is probably still on the web queue
        document = job.return_value()
        if isinstance(document, dict):
            if result_record(submission_id=submission.pk, document=document, job_id=job.id) is not None:
                report.recovered.append(submission.pk)
            else:  # an infra_error document: retried like any other
                report.requeued.append(submission.pk)
            return
        _attempt_failed(submission, "The evaluation job finished but its result was lost.", report)
        return
    _attempt_failed(submission, f"The evaluation job {getattr(status, 'value', status)}{_where(submission, job)} "
                                f"before it could report a result ({_job_failure(job)}).", report)


def _reap_started_job(submission: Submission, job: Job, now: datetime, report: ReapReport) -> None:
    if _job_abandoned(job, now):
        last = job.last_heartbeat or job.started_at
        when = f" at {last:%H:%M:%S} UTC" if last else ""
        _attempt_failed(submission, f"The worker evaluating this submission{_where(submission, job)} stopped sending "
                                    f"heartbeats{when} (it was killed, or its host went down).", report)
        return
    if submission.state == Submission.State.QUEUED:  # the worker's "running" message was lost or is late
        submission_mark_running(submission_id=submission.pk, worker=job.worker_name or "",
                                started_at=job.started_at, job_id=job.id)
    if job.last_heartbeat and (submission.heartbeat_at is None or job.last_heartbeat > submission.heartbeat_at):
        Submission.objects.filter(pk=submission.pk, job_id=job.id).update(heartbeat_at=job.last_heartbeat)


def _reap_one(submission: Submission, now: datetime, grace: timedelta, redis: _Redis, report: ReapReport) -> None:
    if submission.profile not in PROFILES:
        logger.error("submission %s has an unknown profile %r; the reaper leaves it", submission.pk, submission.profile)
        return
    job = _job(submission)
    if job is None:
        if submission.state == Submission.State.QUEUED:
            _attempt_failed(submission, "The evaluation job was lost from the queue before a worker took it "
                                        "(Redis restarted or dropped it).", report)
            return
        last_sign = submission.heartbeat_at or submission.started_at or submission.enqueued_at or submission.created_at
        if now - last_sign > timedelta(seconds=submission.job_timeout_s) + grace:
            silent = int((now - last_sign).total_seconds())
            who = f"Worker {submission.worker}" if submission.worker else "The worker"
            _attempt_failed(submission, f"{who} started this evaluation {silent} s ago and never reported a result; "
                                        f"Redis no longer knows its job, and the limit is {submission.job_timeout_s} s.",
                            report)
        return
    status = job.get_status(refresh=False)
    if status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        _reap_ended_job(submission, job, status, now, grace, report)
    elif status == JobStatus.STARTED:
        _reap_started_job(submission, job, now, report)
    elif status == JobStatus.QUEUED and submission.state == Submission.State.QUEUED:
        if job.id not in redis.queued_ids(job.origin):
            job.delete()  # its hash survived but the queue lost it
            _attempt_failed(submission, "The evaluation job was lost from the queue before a worker took it.", report)
    # scheduled or deferred: RQ holds it and will queue it


def submissions_reap(*, now: datetime | None = None) -> ReapReport:
    """Makes Redis agree with the database again. Queued rows whose job Redis lost, running rows whose worker
    stopped heartbeating or whose job failed without a reply: each is a failed attempt, queued again while it has
    attempts left (settings.ARENA_MAX_ENQUEUES) and ended as infra_error after. A finished job whose reply was lost
    has its result recovered. Safe to run at any time, from many places at once (every change re-checks the row
    under a lock and names the attempt it is about).
    """
    now = now or timezone.now()
    grace = timedelta(seconds=settings.ARENA_REAP_GRACE_S)
    report = ReapReport()
    redis = _Redis()
    queued = Submission.objects.filter(state=Submission.State.QUEUED, created_at__lt=now - grace)
    for submission in queued.order_by("id"):
        if submission.enqueued_at and submission.enqueued_at > now - grace:
            continue  # just (re-)enqueued: give the job time to show up
        report.checked += 1
        with transaction.atomic():  # what it enqueues goes to Redis when this commits
            _reap_one(submission, now, grace, redis, report)
    for submission in Submission.objects.filter(state=Submission.State.RUNNING).order_by("id"):
        report.checked += 1
        with transaction.atomic():
            _reap_one(submission, now, grace, redis, report)
    return report


# --- model runs -----------------------------------------------------------------------------------------


def _aggregate_fields(aggregate) -> dict[str, Any]:
    return {
        "problems": aggregate.problems,
        "mean_pass_at_k": aggregate.mean_pass_at_k,
        "mean_fast_p_at_k": {str(p): v for p, v in aggregate.mean_fast_p_at_k.items()},
        "geomean_speedup": aggregate.geomean_speedup,
        "mean_roofline_fraction": aggregate.mean_roofline_fraction,
        "correct_attempts": aggregate.correct_attempts,
        "not_scorable": list(aggregate.not_scorable),
        "not_attempted": list(aggregate.not_attempted),
        "coverage": aggregate.coverage,
    }


def run_score_refresh(*, model_run_id: int) -> RunScore | None:
    """Recomputes a run's progress (attempts done, state) and its RunScore from its attempts as they stand.

    Called inside ``result_record``'s transaction; the run's row is locked so results of one run landing at
    once on several web workers are counted one after another. Recomputing from scratch keeps it idempotent.
    """
    from leaderboard import selectors

    with transaction.atomic():
        run = ModelRun.objects.select_for_update().filter(pk=model_run_id).first()
        if run is None:
            return None
        attempts = selectors.model_run_attempts(run=run)
        score = selectors.model_run_score(run=run, attempts=attempts)
        at_1 = selectors.model_run_score(run=run, attempts=attempts, k=1, suite={})
        overall = score.overall
        values = {
            "k": score.k,
            "pass_at_1": at_1.overall.mean_pass_at_k,
            "pass_at_k": overall.mean_pass_at_k,
            "fast_1_at_k": overall.mean_fast_p_at_k.get(1.0),
            "fast_1_5_at_k": overall.mean_fast_p_at_k.get(1.5),
            "fast_2_at_k": overall.mean_fast_p_at_k.get(2.0),
            "geomean_speedup": overall.geomean_speedup,
            "mean_roofline_fraction": overall.mean_roofline_fraction,
            "problems_scored": overall.problems,
            "problems_not_scorable": len(overall.not_scorable),
            "problems_not_attempted": len(overall.not_attempted),
            "coverage": overall.coverage,
            "correct_attempts": overall.correct_attempts,
            "by_category": {cat: _aggregate_fields(agg) for cat, agg in score.by_category.items()},
        }
        row, _ = RunScore.objects.update_or_create(model_run=run, defaults=values)
        cache.rankings_changed(cache.RUNS, cache.run_scope(run.pk), cache.user_scope(_username(run.user_id)))

        done = sum(1 for a in attempts if a.is_done)
        started = any(a.state != Submission.State.QUEUED for a in attempts)
        state = (ModelRun.State.FINISHED if attempts and done == len(attempts)
                 else ModelRun.State.RUNNING if started else ModelRun.State.QUEUED)
        if (run.attempts_done, run.attempts_total, run.state) != (done, len(attempts), state):
            run.attempts_done, run.attempts_total = done, len(attempts)
            if state == ModelRun.State.FINISHED and run.state != state:
                run.finished_at = timezone.now()
            run.state = state
            run.save(update_fields=["attempts_done", "attempts_total", "state", "finished_at"])
    return row


def archive_upload_read(upload) -> bytes:
    """The bytes of an uploaded archive, refusing one over the size limit without reading it all."""
    limit = settings.ARENA_MAX_ARCHIVE_BYTES
    if upload.size is not None and upload.size > limit:
        raise ValidationError({"archive": f"{upload.name}: {_kib(upload.size)} is more than the {_kib(limit)} an "
                                          f"upload may be; trim the trajectories (they are optional) or split the "
                                          f"run."})
    return upload.read(limit + 1)


def _archive_refusal(problems: list[str]) -> ValidationError:
    shown = problems[:archive.MAX_PROBLEMS_LISTED]
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
    if len(data) > settings.ARENA_MAX_ARCHIVE_BYTES:
        raise ValidationError({"archive": f"{name}: {_kib(len(data))} is more than the "
                                          f"{_kib(settings.ARENA_MAX_ARCHIVE_BYTES)} an upload may be; trim the "
                                          f"trajectories (they are optional) or split the run."})
    known = {p.pk: p for p in Problem.objects.all()}
    try:
        parsed = archive.read_archive(data, name, known, max_bytes=settings.ARENA_MAX_ARCHIVE_BYTES,
                                      max_attempt_bytes=settings.ARENA_MAX_SOURCE_BYTES)
    except archive.ArchiveError as exc:
        raise _archive_refusal(exc.problems) from None
    manifest = parsed.manifest

    # The same checks a solo upload gets, each message naming the attempt's file.
    problems: list[str] = []
    texts: dict[tuple[str, int], str] = {}
    for attempt in parsed.attempts:
        try:
            _profile_check(known[attempt.problem_id], manifest.hardware)
            texts[attempt.problem_id, attempt.index] = source_validate(attempt.source)
        except ValidationError as exc:
            problems.extend(f"{attempt.filename}: {m}" for m in exc.messages)
    if problems:
        raise _archive_refusal(problems)

    digest = hashlib.sha256(data).hexdigest()
    earlier = ModelRun.objects.filter(user=user, archive_sha256=digest).values_list("pk", flat=True).first()
    if earlier is not None and not is_demo:
        raise ValidationError({"archive": f"{name}: you uploaded this very archive already, as model run "
                                          f"#{earlier}; its results are on that run's page."})
    pending = ModelRun.objects.filter(user=user).exclude(state=ModelRun.State.FINISHED).count()
    if pending >= settings.ARENA_MAX_PENDING_RUNS_PER_USER:
        raise ValidationError(f"You already have {pending} model runs being evaluated; the limit is "
                              f"{settings.ARENA_MAX_PENDING_RUNS_PER_USER}. Upload this one when one has finished.")

    with transaction.atomic():
        run = ModelRun.objects.create(
            user=user, model=manifest.model, provider=manifest.provider, mode=manifest.protocol, k=manifest.k,
            turn_budget=manifest.turn_budget, tokens=manifest.tokens, wall_time_s=manifest.wall_time_s,
            profile=manifest.hardware, precision=manifest.precision or "", suite=manifest.suite,
            run_date=manifest.date, open_weights=manifest.open_weights, notes=manifest.notes,
            manifest=manifest.as_dict(), archive_name=name, archive_sha256=digest, is_demo=is_demo,
            attempts_total=len(parsed.attempts),
        )
        rows = Submission.objects.bulk_create([
            _submission_row(user=user, problem=known[a.problem_id], profile=manifest.hardware,
                            filename=posixpath.basename(a.filename), text=texts[a.problem_id, a.index],
                            model_run=run, attempt=a.index)
            for a in parsed.attempts
        ])
        by_attempt = {(s.problem_id, s.attempt): s for s in rows}
        Trajectory.objects.bulk_create([
            Trajectory(submission=by_attempt[t.problem_id, t.index], filename=t.filename, format=t.format,
                       content=t.text.replace("\x00", "\\0"), size=len(t.text.encode("utf-8")))
            for t in parsed.trajectories
        ])
        for submission in rows:
            _enqueue_after_commit(submission)
        run_score_refresh(model_run_id=run.pk)
        cache.rankings_changed(cache.RUN_LIST)  # the comparison offers every run
    run.refresh_from_db()
    return run
