"""`arena login` keeps the API token in ~/.config/arena/token (mode 0600); `arena submit` takes --token, then
ARENA_TOKEN, then that file. The portal itself is exercised in tests/leaderboard/testmode/test_cli_portal.py."""

from __future__ import annotations

import stat

from evaluator.cli.client import resolve_portal, resolve_token
from evaluator.cli.main import main


def test_login_stores_the_token_readable_by_its_owner_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    monkeypatch.delenv("ARENA_PORTAL", raising=False)
    assert main(["login", "--token", "abc123", "--no-check", "--portal", "http://arena.test/"]) == 0
    path = tmp_path / "arena" / "token"
    assert path.read_text().strip() == "abc123"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_token(None) == "abc123"
    assert resolve_portal(None) == "http://arena.test"
    monkeypatch.setenv("ARENA_TOKEN", "from-env")
    assert resolve_token(None) == "from-env"
    assert resolve_token("given") == "given"


def test_login_refuses_to_save_a_token_it_could_not_check(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert main(["login", "--token", "abc123", "--portal", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the portal" in err and "--no-check" in err
    assert not (tmp_path / "arena" / "token").exists()


def test_submit_without_any_token_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert main(["submit", "--problem", "collectives/all_reduce", "--solution", "x.py"]) == 2
    assert "arena login" in capsys.readouterr().err


def test_login_with_nothing_typed_or_piped_says_so_without_a_traceback(tmp_path, monkeypatch, capsys):
    """Ctrl-D at the prompt, or no terminal at all: a sentence saying how to give the token, status 2."""
    import io

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["login", "--portal", "http://arena.test"]) == 2
    err = capsys.readouterr().err
    assert "no token given" in err and "--token" in err and "Traceback" not in err
    assert not (tmp_path / "arena" / "token").exists()


def test_login_reads_a_piped_token(tmp_path, monkeypatch, capsys):
    import io

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("piped-token\n"))
    assert main(["login", "--portal", "http://arena.test", "--no-check"]) == 0
    assert (tmp_path / "arena" / "token").read_text().strip() == "piped-token"
