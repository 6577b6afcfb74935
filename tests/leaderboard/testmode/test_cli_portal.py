"""The CLI against a live portal: `arena login` checks the token before keeping it, `arena test` uses the token
`arena login` saved (and says so when it tests here instead), `arena submit` and `arena test` say at once when no
worker serves the profile, with the command that starts one, instead of waiting in silence."""

from __future__ import annotations

import subprocess
import sys

import pytest
from rest_framework.authtoken.models import Token

from evaluator.cli.main import main
from leaderboard.models import Submission, TestRun
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, ROOT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    monkeypatch.delenv("ARENA_PORTAL", raising=False)
    return tmp_path / "arena"


def _a_worker_serves(redis_conn, *queues: str):
    from rq import Worker

    worker = Worker(list(queues), connection=redis_conn)
    worker.register_birth()
    worker.heartbeat()
    return worker


def test_login_checks_the_token_against_the_portal(problems, user, live_server, config, capsys):
    assert main(["login", "--portal", live_server.url, "--token", "not-a-token"]) == 1
    err = capsys.readouterr().err
    assert "does not accept this token" in err and "/accounts/token/" in err
    assert not (config / "token").exists()
    token = Token.objects.create(user=user).key
    assert main(["login", "--portal", live_server.url, "--token", token]) == 0
    assert f"accepted by {live_server.url}" in capsys.readouterr().out
    assert (config / "token").read_text().strip() == token
    assert (config / "portal").read_text().strip() == live_server.url


def test_arena_test_uses_the_saved_login_and_its_portal(problems, user, live_server, redis_conn, config, capsys):
    _a_worker_serves(redis_conn, "cpu-gloo-2-test", "cpu-gloo-2")
    token = Token.objects.create(user=user).key
    assert main(["login", "--portal", live_server.url, "--token", token]) == 0
    capsys.readouterr()
    assert main(["test", "--problem", ALL_REDUCE, "--solution", str(CORRECT), "--no-follow"]) == 0
    out = capsys.readouterr()
    assert f"queued on cpu-gloo-2 at {live_server.url}" in out.out and "no worker" not in out.err
    assert TestRun.objects.get().user == user


def test_arena_test_with_no_token_says_it_tests_here(tmp_path, config):
    broken = tmp_path / "broken.py"
    broken.write_text("def solution(x)\n    return x\n")
    out = subprocess.run(
        [sys.executable, "-m", "evaluator.cli", "test", "--problem", ALL_REDUCE, "--solution", str(broken), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert "no API token" in out.stderr and "testing here, on this machine" in out.stderr


def test_submit_to_an_unserved_profile_says_so_at_once_and_ends(
    problems, user, live_server, redis_conn, config, capsys
):
    token = Token.objects.create(user=user).key
    assert main(["login", "--portal", live_server.url, "--token", token]) == 0
    code = main(
        [
            "submit",
            "--problem",
            ALL_REDUCE,
            "--solution",
            str(CORRECT),
            "--hardware",
            "h200-nvlink-4",
            "--timeout",
            "600",
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "no worker serves h200-nvlink-4" in err and "rq worker" in err and "h200-nvlink-4-test h200-nvlink-4" in err
    assert Submission.objects.get().profile == "h200-nvlink-4"  # queued, for when a worker starts
    # The same for a test; a profile that is served is followed as before.
    assert main(["test", "--problem", ALL_REDUCE, "--solution", str(CORRECT), "--hardware", "h200-nvlink-4"]) == 3
    assert "no worker serves h200-nvlink-4" in capsys.readouterr().err
    _a_worker_serves(redis_conn, "cpu-gloo-2-test", "cpu-gloo-2")
    assert main(["submit", "--problem", ALL_REDUCE, "--solution", str(CORRECT), "--no-follow"]) == 0
    assert "no worker" not in capsys.readouterr().err


def test_arena_test_of_a_broken_file_prints_its_line_at_once(
    problems, user, live_server, redis_conn, config, capsys, tmp_path
):
    token = Token.objects.create(user=user).key
    assert main(["login", "--portal", live_server.url, "--token", token]) == 0
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"import torch\n\ndef solution(x)\n    return x  # \xff\n")  # not even UTF-8
    assert main(["test", "--problem", ALL_REDUCE, "--solution", str(broken)]) == 0  # no worker needed, none waited
    out = capsys.readouterr()
    assert "verdict: compile_error" in out.out and "broken.py:" in out.out, out
    assert "no worker" not in out.err
