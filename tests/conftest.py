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

# Passwords are hashed with a fast hasher in the tests' own process: the deployment's PBKDF2 costs about half a second
# of CPU per hash on 2 cores, paid by every test user and every log-in, and no test is about the hash's cost. Any
# hash still verifies (the deployment's hashers follow), and the settings the tests check in a process of their own
# (tests/portal/test_settings_environment.py, test_security.py) are the deployment's, untouched.
from django.conf import settings as _settings  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

override_settings(
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher", *_settings.PASSWORD_HASHERS]
).enable()

import pytest  # noqa: E402

from tests.browser import chromium_page  # noqa: E402,F401  (a fixture for the browser tests)


# The slow kinds of test (markers declared in pytest.ini), marked by what they need, so a new test in these files or
# with these fixtures is marked without a decorator: browser (the *_browser.py modules), gpu (*_gpu.py and
# test_gpu.py), worker (the run_worker fixture, and the tests below that run workers of their own), sandbox (the files
# and tests below: evaluations in bubblewrap).
SANDBOX_TESTS = frozenset(
    {
        "tests/evaluator/host/test_check.py",
        "tests/evaluator/host/test_evaluate.py",
        "tests/evaluator/host/test_exchange_files.py",
        "tests/evaluator/host/test_judge_sandbox.py",
        "tests/evaluator/host/test_mount_table.py::"
        "test_every_folder_the_sandbox_names_its_own_way_comes_from_the_cache_root_or_the_evaluations_folder",
        "tests/evaluator/host/test_mount_table.py::"
        "test_a_stray_process_is_named_by_the_pid_the_sandbox_gave_it_not_the_hosts",
        "tests/evaluator/host/test_pool.py",
        "tests/evaluator/host/test_prebuild.py",
        "tests/evaluator/host/test_sandbox_limits.py",
        "tests/evaluator/suites/test_pkb.py",
        "tests/evaluator/test_cheats.py",
        "tests/evaluator/test_starters.py::test_the_plain_starter_passes_as_given_through_arena_eval",
        "tests/evaluator/host/test_worker.py::test_the_warm_worker_heartbeats_while_it_evaluates_and_leaves_the_next_sandboxes_waiting",
    }
)
# Workers the test runs itself rather than through run_worker: RQ workers in-process that evaluate in the sandbox,
# worker subprocesses started as `make run` starts them, a redis-server of the test's own killed and restarted.
WORKER_TESTS = frozenset(
    {
        "tests/leaderboard/submissions/test_fair_queue.py::"
        "test_one_users_many_attempts_delay_another_users_submission_by_at_most_one_evaluation",
        "tests/leaderboard/submissions/test_faults.py",
        "tests/leaderboard/submissions/test_scheduler_restart.py",
    }
)
# ... and slow (besides those marked in their own files): the compiled engine's build and processes, hundreds of
# short process-group runs of every problem's reference and known answers, a Python process of their own that
# imports torch or Django (the CLI, manage.py, arena check-problem), pages or exports over every problem, and the
# query-count checks that seed rankings at several sizes.
SLOW_TESTS = frozenset(
    {
        "tests/evaluator/timer/test_timer.py",
        "tests/problems/test_references.py",
        "tests/evaluator/cli/test_check_problem.py::"
        "test_check_problem_runs_the_reference_the_known_answers_the_bench_preset_and_the_link_bytes",
        "tests/portal/test_local_env.py::test_readme_createsuperuser_works_with_the_generated_env",
        "tests/portal/test_local_env.py::test_the_readmes_other_manage_commands_load_with_the_generated_env",
        "tests/leaderboard/testmode/test_cli_portal.py::test_arena_test_with_no_token_says_it_tests_here",
        "tests/leaderboard/testmode/test_test_mode.py::test_arena_test_here_names_the_line_of_a_syntax_error",
        "tests/leaderboard/testmode/test_test_mode.py::test_a_test_result_appears_on_no_ranking_page_export_or_dataset",
        "tests/leaderboard/web/test_write_solution.py::test_every_problem_page_offers_starters_that_download_as_python",
        "tests/leaderboard/datasets/test_export.py::test_export_writes_the_hugging_face_layout_and_round_trips",
        "tests/leaderboard/rankings/test_standings.py::test_the_home_page_makes_the_same_few_queries_at_any_size",
        "tests/leaderboard/rankings/test_ranking_scale.py::"
        "test_every_ranking_page_makes_the_same_bounded_number_of_queries_at_any_size",
        "tests/leaderboard/rankings/test_ranking_scale.py::test_ranking_page_with_a_hundred_runs_is_a_few_queries",
        "tests/leaderboard/rankings/test_ranking_scale.py::test_exports_stream_every_row_in_the_same_few_queries_at_any_size",
    }
)
# Checks repeated over every problem or every file of a kind (hundreds of cases, minutes on 2 cores together). The
# inner loop keeps each one's first case per category (collectives, tensor-parallel, ...; for files outside problems/,
# per top folder); the rest are marked slow, so `make test` still runs every case.
SWEEPS = frozenset(
    {
        "tests/evaluator/test_starters.py::test_every_problem_has_standalone_starters_with_the_reference_signature",
        "tests/evaluator/analysis/test_static_checks.py::test_honest_code_in_the_repository_is_not_refused",
        "tests/evaluator/analysis/test_kernelguard_layer.py::test_no_known_correct_solution_is_refused_by_kernelguard",
        "tests/problems/test_audit.py::test_every_input_changes_with_the_seed",
        "tests/problems/test_audit.py::test_roofline_link_bytes_are_at_most_what_the_reference_moves",
        "tests/problems/test_audit.py::test_roofline_internode_bytes_are_at_most_what_the_reference_sends_across_nodes",
        "tests/problems/test_audit.py::test_reference_leaves_inputs_alone_and_returns_separate_outputs",
    }
)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sweep_group(item) -> str:
    """The category a sweep's case belongs to: the first part of its problem id or of its path under problems/."""
    case = item.callspec.id if hasattr(item, "callspec") else item.name
    return case.removeprefix("problems/").split("/", 1)[0]


def pytest_collection_modifyitems(config, items):
    sampled: set[tuple[str, str]] = set()
    for item in items:
        path = os.path.relpath(str(item.path), _ROOT).replace(os.sep, "/")
        name = os.path.basename(path)
        if name.endswith("_browser.py"):
            item.add_marker(pytest.mark.browser)
        if name.endswith("_gpu.py") or name == "test_gpu.py":
            item.add_marker(pytest.mark.gpu)
        test = f"{path}::{getattr(item, 'originalname', item.name)}"
        if "run_worker" in getattr(item, "fixturenames", ()) or path in WORKER_TESTS or test in WORKER_TESTS:
            item.add_marker(pytest.mark.worker)
        if path in SANDBOX_TESTS or test in SANDBOX_TESTS:
            item.add_marker(pytest.mark.sandbox)
        if path in SLOW_TESTS or test in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if test in SWEEPS:
            group = (test, _sweep_group(item))
            if group in sampled:
                item.add_marker(pytest.mark.slow)
            sampled.add(group)


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
    from evaluator.host.worker import ArenaSimpleWorker

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
