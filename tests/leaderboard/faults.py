"""Real processes for the fault tests: a Redis server of their own that they can stop and restart (no persistence,
so a restart loses everything, as in production), RQ workers started as `make run` starts them (the web worker as
`manage.py rqworker web`, the evaluation worker as `rq worker` with nothing of Django or the database in its
environment), a way to kill a worker and everything it started with SIGKILL, and a way to make PostgreSQL refuse the
test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from evaluator.host.session import free_port
from tests.conftest import TEST_WORKER_KEY
from tests.leaderboard.helpers import ROOT


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class RedisServer:
    """A redis-server on a spare loopback port, with no persistence: a restart starts empty."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--logfile",
                str(self.workdir / f"redis-{self.port}.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        wait_for(lambda: _pings(client), timeout=10, what=f"redis-server on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # an abrupt end: what a crash or a host reboot does
            self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def _pings(client) -> bool:
    import redis

    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def database_url() -> str:
    """The URL of the database the tests run on (the test database, once pytest-django created it)."""
    from django.db import connection

    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.update(
        ENV_FILE="",
        REDIS_URL=redis_url,
        DATABASE_URL=database_url(),
        CONN_MAX_AGE="0",
        HTTPS="0",
        SECRET_KEY=os.environ.get("SECRET_KEY", "tests-only-secret-key-not-used-anywhere-else-0123456789"),
        PYTHONUNBUFFERED="1",
        ARENA_WORKER_KEY=TEST_WORKER_KEY,
        ARENA_WORKER_KEYS=f"default:evaluations+checks={TEST_WORKER_KEY}",
        **extra,
    )
    return env


def evaluation_worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    """What `make run` gives the evaluation worker (`env -i`): no database, SECRET_KEY or Django settings."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "REDIS_URL": redis_url,
        "ARENA_WORKER_KEY": TEST_WORKER_KEY,
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


class Worker:
    """A worker in a subprocess, started as `make run` starts it: `python manage.py rqworker web` for the web queue
    (Django, the database), `rq worker --worker-class evaluator.host.worker.ArenaWorker --serializer JSON QUEUE...` for
    evaluation queues (``evaluation_worker_env`` only). Its output goes to a log file the test can show."""

    def __init__(
        self, log: Path, redis_url: str, *queues: str, burst: bool = False, scheduler: bool = False, **env: str
    ):
        if "web" in queues:
            args = [sys.executable, "manage.py", "rqworker", *queues]
            environ = worker_env(redis_url, **env)
        else:
            args = [
                str(Path(sys.executable).parent / "rq"),
                "worker",
                "--worker-class",
                "evaluator.host.worker.ArenaWorker",
                "--serializer",
                "rq.serializers.JSONSerializer",
                "--url",
                redis_url,
                "--path",
                str(ROOT),
                *queues,
            ]
            environ = evaluation_worker_env(redis_url, **env)
        if burst:
            args.append("--burst")
        if scheduler:
            args.append("--with-scheduler")
        self.log = log
        self._out = log.open("ab")
        environ = {**environ, "PGAPPNAME": WORKER_APPLICATION_NAME}  # so DatabaseBlock can cut exactly these
        self.process = subprocess.Popen(args, cwd=ROOT, env=environ, stdout=self._out, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker still running after {timeout} s; its log:\n{self.output()}") from None

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # warm shutdown
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_tree(self.pid)
                self.process.wait(timeout=10)
        self._out.close()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_tree(pid: int) -> set[int]:
    """SIGKILLs a process and everything it started, as a host failure would: the whole tree is frozen with
    SIGSTOP first (so nothing forks or escapes to init while we look), then killed. Returns the pids."""
    frozen: set[int] = set()
    while True:
        tree = {pid} | descendants(pid) | {d for p in frozen for d in descendants(p)}
        new = tree - frozen
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        frozen |= new
    for p in frozen:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return frozen


def alive(pids: set[int]) -> set[int]:
    out = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(p)
    return out


WORKER_APPLICATION_NAME = "arena-fault-test-worker"


class DatabaseBlock:
    """Makes PostgreSQL refuse the test database for a while: no new connections, existing ones terminated.
    Done from a separate connection to the `postgres` database, the way an outage or a failover looks to clients."""

    def __init__(self):
        from django.db import connection

        self.name = connection.settings_dict["NAME"]
        self.settings = connection.settings_dict

    def _admin(self, sql: str) -> None:
        import psycopg

        s = self.settings
        with psycopg.connect(
            host=s["HOST"] or "127.0.0.1",
            port=s["PORT"] or 5432,
            user=s["USER"],
            password=s.get("PASSWORD") or None,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(sql)

    def __enter__(self) -> "DatabaseBlock":
        from django.db import connections

        connections.close_all()  # this process's own connection goes too; Django reconnects later on demand
        self._admin(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS false')
        # Only the workers' sessions: the test process's own threads (a live server's, say) keep theirs, as they
        # would be elsewhere in an outage that the test does not simulate for them.
        self._admin(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{self.name}' "
            f"AND application_name = '{WORKER_APPLICATION_NAME}'"
        )
        return self

    def lift(self) -> None:
        self._admin(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS true')

    def __exit__(self, *exc) -> None:
        self.lift()
