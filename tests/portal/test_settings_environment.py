"""Settings come from the environment; production refuses to start without a real SECRET_KEY."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    clean.update(ENV_FILE="", **env)  # ENV_FILE="": ignore a developer's .env
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )


def test_production_start_without_secret_key_is_refused_with_a_clear_message():
    run = _manage("check")
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr and "SECRET_KEY is not set" in run.stderr
    assert "DEBUG=1" in run.stderr


def test_production_start_with_the_insecure_development_key_is_refused():
    from portal.settings import INSECURE_DEV_SECRET_KEY

    run = _manage("check", SECRET_KEY=INSECURE_DEV_SECRET_KEY, DEBUG="0")
    assert run.returncode != 0 and "SECRET_KEY is not set (or is the insecure development default)" in run.stderr


def test_production_starts_with_a_secret_key_and_debug_defaults_to_off():
    run = _manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings; print(settings.DEBUG, settings.REDIS_URL)",
        SECRET_KEY="x" * 50,
        REDIS_URL="redis://example:6379/3",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "redis://example:6379/3"]


def test_development_needs_no_secret_key():
    run = _manage("check", DEBUG="1")
    assert run.returncode == 0, run.stderr


def test_a_queue_per_hardware_profile_plus_web_and_checks():
    from django.conf import settings

    from evaluator.contract.profiles import PROFILES

    assert set(settings.RQ_QUEUES) == {"web", "checks", *PROFILES}  # checks: problem proposals, on CPU


def test_models_and_migrations_agree(db):
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits non-zero when a migration is missing
