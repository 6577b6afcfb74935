"""`manage.py reap --every N`, the reaper `make run` starts, survives a pass that fails on the database or Redis: on
SQLite, `manage.py seed_demo` writing at the same time made a pass fail with "database is locked", and the reaper
died for good while the portal went on without one."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import OperationalError

from portal.management.commands import reap


class _Stop(Exception):
    pass


def test_a_failed_pass_is_one_line_and_the_next_pass_runs(monkeypatch):
    passes = []

    def reap_every_kind(reapers):
        passes.append(len(reapers))
        if len(passes) == 1:
            raise OperationalError("database is locked")
        return []

    def sleep(seconds):
        if len(passes) >= 2:
            raise _Stop

    monkeypatch.setattr(reap, "reap_every_kind", reap_every_kind)
    monkeypatch.setattr(reap.time, "sleep", sleep)
    err = io.StringIO()
    with pytest.raises(_Stop):
        call_command("reap", every=60, stderr=err)
    assert len(passes) == 2
    assert err.getvalue().strip() == (
        "reap: this pass failed (OperationalError: database is locked); the next runs in 60 s"
    )


def test_a_single_pass_still_fails_loudly(monkeypatch):
    def reap_every_kind(reapers):
        raise OperationalError("database is locked")

    monkeypatch.setattr(reap, "reap_every_kind", reap_every_kind)
    with pytest.raises(OperationalError):
        call_command("reap")
