"""`arena login` keeps the API token in ~/.config/arena/token (mode 0600); `arena submit` takes --token, then
ARENA_TOKEN, then that file."""

from __future__ import annotations

import stat

from evaluator.cli.client import resolve_token
from evaluator.cli.main import main


def test_login_stores_the_token_readable_by_its_owner_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert main(["login", "--token", "abc123"]) == 0
    path = tmp_path / "arena" / "token"
    assert path.read_text().strip() == "abc123"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_token(None) == "abc123"
    monkeypatch.setenv("ARENA_TOKEN", "from-env")
    assert resolve_token(None) == "from-env"
    assert resolve_token("given") == "given"


def test_submit_without_any_token_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert main(["submit", "--problem", "collectives/all_reduce", "--solution", "x.py"]) == 2
    assert "arena login" in capsys.readouterr().err
