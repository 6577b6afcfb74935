"""Test environment for the whole suite.

Web tests run against the database in DATABASE_URL (SQLite by default; CI uses PostgreSQL) and a REAL Redis:
a database number of their own (TEST_REDIS_URL, default redis://127.0.0.1:6379/15) that they flush. Nothing
that a deployment runs (database, Redis, RQ) is mocked; RQ workers run in-process in burst mode.
"""

from __future__ import annotations

import os

# Set before Django reads its settings: a test-only secret and a Redis database the tests may flush.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-used-anywhere-else-0123456789")
os.environ.setdefault("HTTPS", "0")  # the test client speaks plain http; production's HTTPS defaults are tested apart
os.environ["REDIS_URL"] = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# The workers' signing key (evaluator/contract/signing.py): workers take ARENA_WORKER_KEY, the portal ARENA_WORKER_KEYS.
TEST_WORKER_KEY = "tests-only-worker-key-0123456789"
os.environ.setdefault("ARENA_WORKER_KEYS", f"default:evaluations+checks={TEST_WORKER_KEY}")
os.environ.setdefault("ARENA_WORKER_KEY", TEST_WORKER_KEY)
os.environ.setdefault("ARENA_REDIS_WITHOUT_PASSWORD", "1")  # the tests' Redis has none; production settings refuse that
# The cached ranking pages (leaderboard/web/cache.py) live in that Redis too, under a prefix of this session's own, so
# two test sessions on one machine never serve each other's pages (subprocesses the tests start inherit it).
os.environ["ARENA_CACHE_PREFIX"] = f"test-{os.getpid()}-{os.urandom(4).hex()}"

import django  # noqa: E402

django.setup()

import pytest  # noqa: E402

from tests.browser import chromium_page  # noqa: E402,F401  (a fixture for the browser tests)


# The slow kinds of test (markers declared in pytest.ini), marked by what they need, so a new test in these files or
# with these fixtures is marked without a decorator: browser (the *_browser.py modules), gpu (*_gpu.py and
# test_gpu.py), worker (the run_worker fixture), sandbox (the files and tests below: evaluations in bubblewrap).
SANDBOX_TESTS = frozenset(
    {
        "tests/evaluator/host/test_check.py",
        "tests/evaluator/host/test_evaluate.py",
        "tests/evaluator/host/test_exchange_files.py",
        "tests/evaluator/host/test_judge_sandbox.py",
        "tests/evaluator/host/test_pool.py",
        "tests/evaluator/host/test_prebuild.py",
        "tests/evaluator/host/test_sandbox_limits.py",
        "tests/evaluator/suites/test_pkb.py",
        "tests/evaluator/test_cheats.py",
        "tests/evaluator/test_starters.py::test_the_plain_starter_passes_as_given_through_arena_eval",
        "tests/evaluator/test_worker.py::test_the_warm_worker_heartbeats_while_it_evaluates_and_leaves_the_next_sandboxes_waiting",
    }
)
# ... and slow (besides those marked in their own files): the compiled engine's build and processes, and hundreds of
# short process-group runs of every problem's reference and known answers.
SLOW_TESTS = frozenset({"tests/evaluator/timer/test_timer.py", "tests/problems/test_references.py"})
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = os.path.relpath(str(item.path), _ROOT).replace(os.sep, "/")
        name = os.path.basename(path)
        if name.endswith("_browser.py"):
            item.add_marker(pytest.mark.browser)
        if name.endswith("_gpu.py") or name == "test_gpu.py":
            item.add_marker(pytest.mark.gpu)
        if "run_worker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.worker)
        test = f"{path}::{getattr(item, 'originalname', item.name)}"
        if path in SANDBOX_TESTS or test in SANDBOX_TESTS:
            item.add_marker(pytest.mark.sandbox)
        if path in SLOW_TESTS or test in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_cached_pages_from_earlier_tests(request):
    """A test's database rolls back but Redis does not: each test that uses the database starts a new rankings
    generation, so no page another test cached can be served to it."""
    if request.node.get_closest_marker("django_db") or {"db", "transactional_db", "client", "live_server"} & set(
        request.fixturenames
    ):
        from leaderboard.rankings.generations import bump

        bump()
    yield


@pytest.fixture(autouse=True)
def _no_rate_limit_counts_from_earlier_tests():
    """Rate-limit counts live in Redis under this session's prefix (settings' "throttle" cache): each test starts
    with none, so one test's requests never throttle another's."""
    from django.core.cache import caches

    def clear() -> None:
        cache = caches["throttle"]
        try:
            client = cache._cache.get_client(write=True)
            keys = list(client.scan_iter(match=f"{cache.key_prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
        except Exception:  # noqa: BLE001 - no Redis: the tests that need it say so themselves
            pass

    clear()
    yield


@pytest.fixture
def redis_conn():
    """The tests' own Redis database, empty before and after the test."""
    import django_rq

    conn = django_rq.get_connection("web")
    conn.flushdb()
    yield conn
    conn.flushdb()


@pytest.fixture
def run_worker(redis_conn):
    """Runs real RQ workers (the arena's, JSON and allow-listed) in this process until the given queues are empty
    (burst mode): one for the worker queues, then one for the web queue, as deployments keep them apart."""
    from evaluator.worker import ArenaSimpleWorker

    def run(*queue_names: str) -> bool:
        names = queue_names or ("cpu-gloo-2", "web")
        worked = False
        for _ in range(10_000):  # again while a pass did work: recorded results release held rows (the fair queue)
            this_pass = False
            for group in ([n for n in names if n != "web"], [n for n in names if n == "web"]):
                if group:
                    this_pass = ArenaSimpleWorker(group, connection=redis_conn).work(burst=True) or this_pass
            worked = worked or this_pass
            if not this_pass:
                break
        return worked

    return run


@pytest.fixture
def problems(db):
    """The real problem suite, loaded the way `manage.py load_problems` does."""
    from leaderboard.catalogue.services import problems_sync

    problems_sync()
    from leaderboard.models import Problem

    return Problem.objects.all()


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user(username="ada", password="a-long-test-password-1")


@pytest.fixture
def api_client(user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    token = Token.objects.create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def web_client(client, user):
    client.force_login(user)
    return client


def pytest_sessionstart(session):
    """The compiled engine (evaluator/timer) is built once before any test, where it is not built yet: its first build
    takes about a minute on 2 cores, which must not fall inside one test's wait for a worker or a verdict. A host that
    cannot build it gets the tests' own messages saying why."""
    from evaluator import timer

    try:
        timer.build()
    except Exception:  # noqa: BLE001 - the evaluations that need it report the reason themselves
        pass
