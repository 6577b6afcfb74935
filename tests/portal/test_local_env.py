"""`make run` leaves a .env behind so that the README's manage.py commands (createsuperuser first) see the same
settings as the running portal: DEBUG=1 and a random SECRET_KEY, written once and never overwritten."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    clean.update(extra)
    return clean


def _manage(*args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=_env(**extra), capture_output=True, text=True, timeout=120
    )


def test_dotenv_writes_debug_and_a_random_secret_once(tmp_path):
    target = tmp_path / ".env"
    first = subprocess.run(["scripts/dotenv.sh", str(target)], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert first.returncode == 0, first.stderr
    text = target.read_text()
    assert re.search(r"^DEBUG=1$", text, re.M)
    key = re.search(r"^SECRET_KEY=(\S+)$", text, re.M).group(1)
    assert len(key) >= 50
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    subprocess.run(["scripts/dotenv.sh", str(target)], cwd=ROOT, check=True, timeout=30)
    assert target.read_text() == text  # an existing .env is never changed
    other = tmp_path / "other.env"
    subprocess.run(["scripts/dotenv.sh", str(other)], cwd=ROOT, check=True, capture_output=True, timeout=30)
    assert re.search(r"^SECRET_KEY=(\S+)$", other.read_text(), re.M).group(1) != key


def test_readme_createsuperuser_works_with_the_generated_env(tmp_path):
    """What the README says after `make run`: `.venv/bin/python manage.py createsuperuser`, with no DEBUG or
    SECRET_KEY in the shell's environment."""
    target = tmp_path / ".env"
    subprocess.run(["scripts/dotenv.sh", str(target)], cwd=ROOT, check=True, capture_output=True, timeout=30)
    env = {"ENV_FILE": str(target), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    shown = _manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)",
        **env,
    )
    assert shown.returncode == 0, shown.stderr
    debug, secret = shown.stdout.split()
    assert debug == "True" and secret in target.read_text()
    migrated = _manage("migrate", "--noinput", "-v", "0", **env)
    assert migrated.returncode == 0, migrated.stderr
    created = _manage(
        "createsuperuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "admin@example.org",
        DJANGO_SUPERUSER_PASSWORD="a-long-password-0123",
        **env,
    )
    assert created.returncode == 0, created.stderr
    assert "Superuser created" in created.stdout


def test_run_sh_writes_the_env_before_any_manage_command_and_starts_a_worker_per_role():
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert script.index("scripts/dotenv.sh .env") < script.index("$py manage.py")
    assert "export DEBUG" not in script  # DEBUG comes from .env, which every manage.py command reads too
    assert "rqworker web --with-scheduler" in script
    assert re.search(r"for queue in cpu-gloo-2 cpu-gloo-4", script) and "var/worker-checks.log checks" in script


def test_run_sh_starts_evaluation_and_check_workers_apart_from_the_database():
    """The evaluation and check workers: the arena's worker class and JSON, under `env -i` with Redis and their own
    key only; the web side holds the keys by role."""
    script = (ROOT / "scripts" / "run.sh").read_text()
    start = script[script.index("arena_worker() {") :]
    start = start[: start.index("\n}\n")]
    assert re.search(
        r'env -i PATH="\$PATH" HOME="\$HOME" REDIS_URL="\$redis_url" ARENA_WORKER_KEY="\$key" '
        r'ARENA_WORKER_KEY_ID="\$key_id" \\\n',
        start,
    ), start
    assert "--worker-class evaluator.host.worker.ArenaWorker --serializer rq.serializers.JSONSerializer" in start
    for secret in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "ARENA_WORKER_KEYS"):
        assert secret not in start
    assert 'web_keys="local:evaluations=$evaluations_key,local-checks:checks=$checks_key"' in script
    assert "ARENA_WORKER_KEYS=$web_keys $py manage.py rqworker web --with-scheduler" in script
    assert "ARENA_WORKER_KEYS=$web_keys $py manage.py reap" in script


def test_the_readmes_other_manage_commands_load_with_the_generated_env(tmp_path):
    """`load_problems`, `seed_demo`, `rqworker web --with-scheduler` and `reap --every 60` as the README names them:
    each starts with the settings from the generated .env (here up to its --help, which needs the settings)."""
    target = tmp_path / ".env"
    subprocess.run(["scripts/dotenv.sh", str(target)], cwd=ROOT, check=True, capture_output=True, timeout=30)
    for command in ("load_problems", "seed_demo", "rqworker", "reap"):
        shown = _manage(command, "--help", ENV_FILE=str(target))
        assert shown.returncode == 0, (command, shown.stderr[-2000:])


def test_run_sh_says_at_once_when_its_port_is_taken_and_names_the_other_port():
    """`make run` on a machine where something already listens on the port: one sentence saying so and how to pick
    another (PORT), before anything is installed or started; the server and the mailed links use PORT."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            ["scripts/run.sh"], cwd=ROOT, env=_env(PORT=str(port)), capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr and f"PORT={port + 1} make run" in done.stderr
    assert "installing" not in done.stdout and "migrat" not in done.stdout.lower()
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert 'runserver "127.0.0.1:$port"' in script and 'ARENA_SITE_URL="http://127.0.0.1:$port"' in script
    readme = (ROOT / "README.md").read_text()
    assert "`PORT=8001 make run`" in readme
