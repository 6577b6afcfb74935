"""Transitional: ``tests/evaluator/test_pkb.py`` imports ``problems_sync`` from here; it lives in
``leaderboard.catalogue.services``. Delete this module once that test imports it from there."""

from leaderboard.catalogue.services import problems_sync

__all__ = ["problems_sync"]
