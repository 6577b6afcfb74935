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
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq import Queue
from rq.job import Job, JobStatus

from evaluator.jobs import build_queue
from evaluator.prebuild import needs_build
from evaluator.profiles import PROFILES
from evaluator.result import Verdict, empty_document, trim
from evaluator.spec import DEFAULT_TIMEOUTS, EvalSpec
from leaderboard.models import ModelRun, Problem, Result, RunScore, Submission

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
        if problem_id not in problems and row.is_active:
            row.is_active = False
            row.save(update_fields=["is_active", "updated_at"])
            report.deactivated.append(problem_id)
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
    text = source_validate(source)
    pending = Submission.objects.filter(user=user, state__in=[Submission.State.QUEUED, Submission.State.RUNNING])
    if pending.count() >= settings.ARENA_MAX_PENDING_PER_USER:
        raise ValidationError(f"You already have {settings.ARENA_MAX_PENDING_PER_USER} submissions waiting or "
                              f"running. Wait for some to finish, then submit again.")

    with transaction.atomic():
        submission = Submission.objects.create(
            user=user, problem=problem, profile=profile, problem_version=problem.version,
            problem_hash=problem.content_hash, filename=name, source=text,
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), job_timeout_s=job_timeout_s(),
        )
        _enqueue_after_commit(submission)
    return submission


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


def _epoch_to_datetime(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(float(value), tz=dt_timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return timezone.now()


def submission_mark_running(*, submission_id: int, worker: str, started_at: float | datetime | None
                            ) -> Submission | None:
    """A worker started the job. Only a queued row moves to running; a late or repeated message changes nothing
    (except filling in when and where a finished row ran, if its result arrived first)."""
    started = started_at if isinstance(started_at, datetime) else _epoch_to_datetime(started_at)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("mark_running for unknown submission %s", submission_id)
            return None
        if submission.state == Submission.State.QUEUED:
            submission.state = Submission.State.RUNNING
            submission.started_at = started
            submission.heartbeat_at = started
            submission.worker = (worker or "")[:255]
            submission.save(update_fields=["state", "started_at", "heartbeat_at", "worker"])
            if submission.model_run_id is not None:
                ModelRun.objects.filter(pk=submission.model_run_id, state=ModelRun.State.QUEUED).update(
                    state=ModelRun.State.RUNNING)
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


def result_record(*, submission_id: int, document: Any) -> Result | None:
    """Stores a result document and finishes the submission. Idempotent: once a submission has a result, a
    second delivery (a retried job, the reaper recovering a return value) changes nothing."""
    document = _document_normalise(document)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("result for unknown submission %s dropped", submission_id)
            return None
        existing = Result.objects.filter(submission=submission).first()
        if existing is not None or submission.state == Submission.State.CANCELLED:
            return existing
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


def submission_fail(*, submission_id: int, message: str) -> Result | None:
    """Ends a submission with ``infra_error``: the platform, not the solution, failed."""
    submission = Submission.objects.get(pk=submission_id)
    return result_record(submission_id=submission_id, document=_infra_error_document(submission, message))


# --- the reaper -----------------------------------------------------------------------------------------


@dataclass
class ReapReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    checked: int = 0

    def __str__(self) -> str:
        return (f"checked {self.checked}: re-enqueued {self.requeued or 'none'}, failed {self.failed or 'none'}, "
                f"recovered results of {self.recovered or 'none'}")


def _job(submission: Submission) -> Job | None:
    if not submission.job_id:
        return None
    try:
        return Job.fetch(submission.job_id, connection=django_rq.get_connection(submission.profile))
    except NoSuchJobError:
        return None


def _job_failure(job: Job) -> str:
    latest = job.latest_result()
    text = (latest.exc_string if latest is not None else None) or ""
    last_line = text.strip().splitlines()[-1] if text.strip() else job.get_status(refresh=False) or "unknown"
    return trim(str(last_line), 500)


def _reap_job_outcome(submission: Submission, job: Job, report: ReapReport) -> bool:
    """Acts on a job that ended without its reply reaching us. Returns True when the row was settled."""
    status = job.get_status(refresh=False)
    if status == JobStatus.FINISHED:
        document = job.return_value()
        if isinstance(document, dict):
            result_record(submission_id=submission.pk, document=document)
            report.recovered.append(submission.pk)
            return True
        submission_fail(submission_id=submission.pk, message="The evaluation job finished but its result was "
                                                             "lost. Submit the solution again.")
        report.failed.append(submission.pk)
        return True
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        where = f" on worker {submission.worker}" if submission.worker else ""
        submission_fail(submission_id=submission.pk,
                        message=f"The evaluation job {getattr(status, 'value', status)}{where} before it could report a result "
                                f"({_job_failure(job)}). This is a platform failure, not a verdict on your "
                                f"solution; submit it again.")
        report.failed.append(submission.pk)
        return True
    return False


def _reap_queued(submission: Submission, report: ReapReport) -> None:
    job = _job(submission)
    if job is not None:
        if _reap_job_outcome(submission, job, report):
            return
        status = job.get_status(refresh=False)
        if status != JobStatus.QUEUED:
            return  # started, deferred or scheduled: a worker has it
        queue = django_rq.get_queue(PROFILES[submission.profile].queue)
        if job.id in queue.get_job_ids():
            return  # waiting its turn
        job.delete()  # its hash survived but the queue lost it
    if submission.enqueue_count >= settings.ARENA_MAX_ENQUEUES:
        submission_fail(submission_id=submission.pk,
                        message=f"The evaluation job was lost {submission.enqueue_count} times before a worker "
                                f"took it. This is a platform failure; submit the solution again later.")
        report.failed.append(submission.pk)
        return
    with transaction.atomic():
        row = Submission.objects.select_for_update().get(pk=submission.pk)
        if row.state != Submission.State.QUEUED or row.job_id != submission.job_id:
            return  # it moved on while we looked
        _enqueue_after_commit(row)
    report.requeued.append(submission.pk)


def _reap_running(submission: Submission, now: datetime, grace: timedelta, report: ReapReport) -> None:
    job = _job(submission)
    if job is not None and _reap_job_outcome(submission, job, report):
        return
    last_sign = submission.heartbeat_at or submission.started_at or submission.enqueued_at or submission.created_at
    limit = timedelta(seconds=submission.job_timeout_s) + grace
    if now - last_sign > limit:
        silent = int((now - last_sign).total_seconds())
        where = f"Worker {submission.worker}" if submission.worker else "The worker"
        submission_fail(submission_id=submission.pk,
                        message=f"{where} started this evaluation {silent} s ago and never reported a result; "
                                f"the limit is {submission.job_timeout_s} s. This is a platform failure, not a "
                                f"verdict on your solution; submit it again.")
        report.failed.append(submission.pk)


def submissions_reap(*, now: datetime | None = None) -> ReapReport:
    """Re-enqueues queued rows whose job Redis lost, and fails (``infra_error``) running rows whose worker went
    silent past their limit or whose job failed without replying. Safe to run at any time, from many places.
    """
    now = now or timezone.now()
    grace = timedelta(seconds=settings.ARENA_REAP_GRACE_S)
    report = ReapReport()
    queued = Submission.objects.filter(state=Submission.State.QUEUED, created_at__lt=now - grace)
    for submission in queued.order_by("id"):
        if submission.enqueued_at and submission.enqueued_at > now - grace:
            continue  # just (re-)enqueued: give the job time to show up
        report.checked += 1
        _reap_queued(submission, report)
    for submission in Submission.objects.filter(state=Submission.State.RUNNING).order_by("id"):
        report.checked += 1
        _reap_running(submission, now, grace, report)
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
