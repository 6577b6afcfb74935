"""What a migration that fills stored data from the rows fills, against what a rebuild writes: shared by the tests of
each stored table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard.management.commands.seed_demo import seed_demo

T = TypeVar("T")


def _migrate(target: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def rebuilt_and_refilled(back_to: str, state: Callable[[], T]) -> tuple[T, T]:
    """``state()`` after seeding a small demo (which ends with a rebuild of everything stored), then again once the
    leaderboard's migrations were taken back to ``back_to`` (the stored data gone) and forward to the latest (filled
    again from the rows as they stand)."""
    latest = [key for key in MigrationExecutor(connection).loader.graph.leaf_nodes() if key[0] == "leaderboard"]
    seed_demo(runs=8, problems=6, attempts=2, users=2, seed=9, log=lambda _: None)
    rebuilt = state()
    _migrate([("leaderboard", back_to)])
    try:
        _migrate(latest)
    finally:
        _migrate(latest)
    return rebuilt, state()
