"""`manage.py reap` ends the tests no worker answered, and test mode's limits come from the environment and are
counted in the shared Redis cache (settings' ARENA_THROTTLE_CACHE), as the API's throttles are."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from django.utils import timezone

from leaderboard import models
from leaderboard.web.throttles import ApiUserThrottle, TestModeThrottle
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def _post_test(api_client) -> dict:
    response = api_client.post(
        "/api/tests/", {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_reap_ends_a_test_no_worker_answered_as_infra_error_and_leaves_a_recent_one(problems, api_client, redis_conn):
    late, recent = _post_test(api_client), _post_test(api_client)  # queued in Redis; no worker serves the lane
    test = models.TestRun.objects.get(pk=late["id"])
    long_ago = timezone.now() - timedelta(seconds=2 * test.job_timeout_s + 120)
    models.TestRun.objects.filter(pk=test.pk).update(enqueued_at=long_ago, created_at=long_ago)

    out = io.StringIO()
    call_command("reap", stdout=out)

    test.refresh_from_db()
    assert test.state == models.TestRun.State.FINISHED and test.verdict == "infra_error"
    assert "no worker answered" in test.document["message"]
    assert "tests no worker answered, ended as infra_error: 1" in out.getvalue()
    assert models.TestRun.objects.get(pk=recent["id"]).state == models.TestRun.State.QUEUED
    assert api_client.get(late["api_url"]).json()["verdict"] == "infra_error"  # its owner sees why

    call_command("reap", stdout=io.StringIO())  # a second pass changes nothing
    test.refresh_from_db()
    assert test.verdict == "infra_error" and models.TestRun.objects.filter(verdict="infra_error").count() == 1


def test_throttles_count_in_the_redis_cache_that_settings_name():
    assert settings.ARENA_THROTTLE_CACHE == "throttle"
    assert settings.CACHES["throttle"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert ApiUserThrottle().cache is caches["throttle"]
    assert TestModeThrottle().cache is caches["throttle"]


def _settings_in_a_process(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SETTINGS_MODULE")}
    clean.update(ENV_FILE="", **env)
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_test_mode_limits_and_the_throttle_cache_come_from_the_environment():
    run = _settings_in_a_process(
        "from django.conf import settings; from leaderboard.web.throttles import test_limits; "
        "print(settings.ARENA_THROTTLE_CACHE, *test_limits())",
        ARENA_TEST_RATE_PER_MINUTE="7",
        ARENA_TEST_DAILY_BUDGET="42",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["throttle", "7", "42"]


def test_production_refuses_a_throttle_cache_that_is_not_shared():
    run = _settings_in_a_process(
        "from django.conf import settings; print(settings.DEBUG)", DEBUG="0", ARENA_THROTTLE_CACHE="default"
    )
    assert run.returncode != 0 and "ARENA_THROTTLE_CACHE='default' is not a Redis cache" in run.stderr
    run = _settings_in_a_process(
        "from django.conf import settings; print(settings.DEBUG)", DEBUG="0", ARENA_THROTTLE_CACHE="nowhere"
    )
    assert run.returncode != 0 and "is not a cache of settings' CACHES" in run.stderr
