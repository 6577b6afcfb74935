"""``TestRun`` and ``Submission`` share their fields through ``EvaluatedSource``: the migration that moved them keeps
every test's and every submission's data, and a row made by either kind's service has the same shared fields."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard import models

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("leaderboard", "0011_standing_entries")
MIGRATION = "0012_evaluated_source"


def _migrate(target: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def test_the_migration_keeps_every_tests_and_submissions_data(django_user_model):
    latest = [key for key in MigrationExecutor(connection).loader.graph.leaf_nodes() if key[0] == "leaderboard"]
    old = _migrate([BEFORE])
    try:
        user = old.get_model("auth", "User").objects.create(username="before")
        problem = old.get_model("leaderboard", "Problem").objects.create(
            id="collectives/all_reduce", title="All-reduce", category="collectives", version=1, content_hash="c" * 64
        )
        shared = {
            "user_id": user.pk,
            "problem_id": problem.pk,
            "profile": "cpu-gloo-2",
            "problem_version": 1,
            "problem_hash": "c" * 64,
            "filename": "mine.py",
            "source": "def solution(x):\n    return x.clone()\n",
            "sha256": "d" * 64,
            "job_id": "test-1",
            "job_timeout_s": 123,
            "worker": "host-a",
            "state": "finished",
            "verdict": "passed",
        }
        test = old.get_model("leaderboard", "TestRun").objects.create(
            **shared, timing=True, document={"verdict": "passed"}
        )
        submission = old.get_model("leaderboard", "Submission").objects.create(
            **{**shared, "job_id": "submission-1-1"}, source_key="k" * 64, enqueue_count=1
        )
    finally:
        _migrate(latest)
    assert ("leaderboard", MIGRATION) in MigrationExecutor(connection).loader.applied_migrations
    after_test = models.TestRun.objects.get(pk=test.pk)
    after_submission = models.Submission.objects.get(pk=submission.pk)
    for field, value in shared.items():
        assert getattr(after_test, field) == value, field
        assert getattr(after_submission, field) == (value if field != "job_id" else "submission-1-1"), field
    assert after_test.timing is True and after_test.document == {"verdict": "passed"}
    assert after_submission.source_key == "k" * 64 and after_submission.enqueue_count == 1
    assert after_test.created_at == test.created_at and after_submission.created_at == submission.created_at


def test_both_kinds_take_their_shared_fields_from_one_place():
    shared = {f.name for f in models.EvaluatedSource._meta.get_fields()}
    assert {"profile", "problem_version", "problem_hash", "filename", "source", "sha256", "verdict", "job_id"} <= shared
    assert {"job_timeout_s", "worker", "enqueued_at", "started_at", "finished_at", "created_at"} <= shared
    assert issubclass(models.Submission, models.EvaluatedSource) and issubclass(models.TestRun, models.EvaluatedSource)
    problem = models.Problem(id="collectives/all_reduce", version=3, content_hash="e" * 64)
    text = "def solution(x):\n    return x\n"
    for kind in (models.Submission, models.TestRun):
        row = kind.for_source(None, problem, "cpu-gloo-2", "a.py", text, job_timeout_s=60)
        assert (row.problem_version, row.problem_hash, row.filename, row.source, row.job_timeout_s) == (
            3,
            "e" * 64,
            "a.py",
            text,
            60,
        )
        assert row.sha256 == hashlib.sha256(text.encode()).hexdigest()
