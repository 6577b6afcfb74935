"""Writes on test runs: create (validated like a submission, stored, queued on the profile's fast lane after the
commit), mark running and record the result: the lifecycle every kind of queued work has (``leaderboard.lifecycle``;
:data:`TEST` names a test's fields and its job). A test whose worker never answered is ended by ``reaper``.

A test goes on ``evaluator.contract.jobs.test_queue(profile)`` (``<profile>-test``); a host's worker serves that
queue before the ranked one (``rq worker h200-nvlink-4-test h200-nvlink-4``), so a test waits at most for the one
evaluation that worker is running, never behind a model run's attempts.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluator.contract import jobs, states, testmode
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import ResultDocumentError, Verdict, empty_document, from_json
from evaluator.contract.source import solution_problem
from leaderboard.lifecycle import work as lifecycle_work
from leaderboard.lifecycle.queues import JobOrder
from leaderboard.lifecycle.signatures import nonce_for
from leaderboard.lifecycle.work import Work
from leaderboard.models import Problem, TestRun
from leaderboard.submissions import validation

logger = logging.getLogger(__name__)

DEFAULT_MAX_PENDING = 4


def job_timeout_s() -> int:
    return lifecycle_work.job_timeout_s(testmode.TEST_TIMEOUTS)


def test_run_create(
    *, user, problem: Problem | str, profile: str, filename: str | None, source: str | bytes, timing: bool = False
) -> TestRun:
    """Validates the upload exactly as a submission's and queues an unranked test of it on the fast lane."""
    problem = validation.problem_resolve(problem)
    validation.profile_check(problem, profile)
    name = validation.filename_clean(filename)
    validation.filename_check(problem, name)
    text, failure = source_checked(source, name)
    if failure is not None:
        return _finished_at_upload(
            user=user, problem=problem, profile=profile, name=name, text=text, timing=timing, failure=failure
        )
    limit = getattr(settings, "ARENA_MAX_PENDING_TESTS_PER_USER", DEFAULT_MAX_PENDING)
    if TestRun.objects.filter(user=user, state__in=states.PENDING_STATES).count() >= limit:
        raise ValidationError(
            f"You already have {limit} tests waiting or running. Wait for one to finish, then test again."
        )
    with transaction.atomic():
        test = _row(user=user, problem=problem, profile=profile, name=name, text=text, timing=timing)
        test.save()
        TEST.enqueue_after_commit(test)
    return test


def source_checked(source: str | bytes, name: str = "solution.py") -> tuple[str, dict[str, Any] | None]:
    """The upload as text and, when it cannot run at all (not UTF-8, NUL bytes, empty, a syntax error, no
    ``solution``), the diagnostic that says where: ``{"file", "line", "column", "kind", "text"}``. An upload over
    the size limit is refused (``ValidationError``): that is the request at fault, not the solution."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    raw = source if isinstance(source, bytes) else source.encode("utf-8", errors="surrogatepass")
    if len(raw) > limit:
        validation.source_validate(source)  # raises the size message
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            text = source.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
            line = source[: exc.start].count(b"\n") + 1
            return text, {
                "file": name,
                "line": line,
                "column": None,
                "kind": "error",
                "text": f"not UTF-8 text (byte 0x{source[exc.start]:02x} at offset {exc.start}); save the "
                f"file as UTF-8",
            }
    else:
        text = source.encode("utf-8", errors="replace").decode("utf-8")  # unpaired surrogates cannot be stored
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        return text.replace("\x00", "\ufffd"), {
            "file": name,
            "line": line,
            "column": None,
            "kind": "error",
            "text": "a NUL byte: this is not Python source text",
        }
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return text, {
            "file": name,
            "line": int(exc.lineno or 1),
            "column": exc.offset,
            "kind": "syntax",
            "text": f"SyntaxError: {exc.msg}" + (f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""),
        }
    except (ValueError, RecursionError, MemoryError) as exc:
        return text, {
            "file": name,
            "line": 1,
            "column": None,
            "kind": "syntax",
            "text": f"cannot be parsed as Python ({type(exc).__name__})",
        }
    problem = solution_problem(text, where=name)
    if problem is not None:
        match = re.search(r"line (\d+)", problem)
        return text, {
            "file": name,
            "line": int(match.group(1)) if match else 1,
            "column": None,
            "kind": "error",
            "text": problem,
        }
    return text, None


def _finished_at_upload(
    *, user, problem: Problem, profile: str, name: str, text: str, timing: bool, failure: dict[str, Any]
) -> TestRun:
    """A test whose file cannot even be imported ends at once as ``compile_error`` with its diagnostic: no worker
    is needed to say so, and a program in a refinement loop reads it like any other result."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    spec = testmode.test_spec(
        problem_id=problem.id,
        source=text,
        profile=profile,
        device=PROFILES[profile].device,
        solution_name=name,
        problem_version=problem.version,
        problem_hash=problem.content_hash,
        timing=bool(timing),
    )
    document = empty_document()
    where = f"{failure['file']}, line {failure['line']}"
    document.update(
        verdict=Verdict.COMPILE_ERROR.value,
        message=f"{where}: {failure['text']} (found when the file was uploaded; nothing was run)",
        problem={"id": problem.id, "version": problem.version, "content_hash": problem.content_hash},
        solution={"filename": name, "sha256": sha},
    )
    testmode.annotate(document, spec)
    document["diagnostics"] = [failure]
    document["test"]["checked_at_upload"] = True
    now = timezone.now()
    test = _row(
        user=user,
        problem=problem,
        profile=profile,
        name=name,
        text=text,
        timing=timing,
        state=TestRun.State.FINISHED,
        verdict=document["verdict"],
        document=document,
        started_at=now,
        finished_at=now,
    )
    test.save()
    return test


def _row(*, user, problem: Problem, profile: str, name: str, text: str, timing: bool, **own: Any) -> TestRun:
    """A new, unsaved test of validated source (the fields it shares with a submission's row from
    ``EvaluatedSource.for_source``)."""
    return TestRun.for_source(
        user, problem, profile, name, text, job_timeout_s=job_timeout_s(), timing=bool(timing), **own
    )


def spec_for(test: TestRun) -> dict[str, Any]:
    return testmode.test_spec(
        problem_id=test.problem_id,
        source=test.source,
        profile=test.profile,
        device=PROFILES[test.profile].device,
        solution_name=test.filename,
        problem_version=test.problem_version,
        problem_hash=test.problem_hash,
        timing=test.timing,
    ).to_dict()


def _orders(test: TestRun) -> list[JobOrder]:
    return [
        JobOrder(
            queue=jobs.test_queue(test.profile),
            function=jobs.EVALUATE_TEST,
            args=(spec_for(test), test.pk, nonce_for(test.job_id)),
            timeout=test.job_timeout_s,
            description=f"test #{test.pk}: {test.problem_id} on {test.profile}",
            job_id=test.job_id,
        )
    ]


# A test's lifecycle: one attempt (job id "test-<pk>"), never retried; the reaper ends it by its deadline.
TEST: Work[TestRun] = Work(
    model=TestRun,
    name="test",
    job_prefix="test",
    waiting=TestRun.State.QUEUED,
    running=TestRun.State.RUNNING,
    orders=_orders,
    queue_of=lambda test: jobs.test_queue(test.profile),
    if_redis_fails="it fails when its limit has passed",
    count_field=None,
)


def test_run_mark_running(*, test_id: int, worker: str, started_at: Any, job_id: str | None = None) -> None:
    TEST.mark_running(row_id=test_id, job_id=job_id, worker=str(worker), started=started_at)


def test_run_record(*, test_id: int, document: dict[str, Any], job_id: str | None = None) -> bool:
    """Stores a test's document once; a second delivery, or one for another job id, changes nothing."""
    with transaction.atomic():
        test = TestRun.objects.select_for_update().filter(pk=test_id).first()
        if test is None or test.is_done or (job_id and test.job_id and job_id != test.job_id):
            return False
        try:
            document = from_json(document).raw  # the contract's one reader, as for a submission's result
        except ResultDocumentError as exc:
            bad = empty_document()
            bad["verdict"] = Verdict.INFRA_ERROR.value
            bad["message"] = f"the worker's reply was not a result document: {exc}"
            document = bad
        document.setdefault("test", {"ranked": False})
        test.document, test.verdict = document, document["verdict"]
        test.state, test.finished_at = TestRun.State.FINISHED, timezone.now()
        test.save(update_fields=["document", "verdict", "state", "finished_at"])
    return True
