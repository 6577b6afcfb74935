"""Recomputes every stored standing (each problem's ranking line per profile, version and revision with its best
speedup over time, each category's line on the home page, each problem version's measured roofline and baseline,
the values the runs' filters offer, the ranking's counts and rank-interval ends per set of filters from the runs'
stored scores, and each run's protocol label) from the results, the way recording them one by one
leaves them; with ``--runs``, every model run's score too (its ranking row and the whole score its page reads):

    python manage.py rebuild_standings [--runs]

Run it once after the migration that adds the standings, and after rows were deleted or written outside the
services (an admin's delete, a restore)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from leaderboard.rankings.services import run_scores_rebuild, standings_rebuild


class Command(BaseCommand):
    help = "Recompute every problem's and category's stored standing (and with --runs every run's score)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--runs", action="store_true", help="also recompute every model run's score")

    def handle(self, *args, runs: bool = False, **options) -> None:
        started = time.perf_counter()
        count = standings_rebuild()
        scored = f" and {run_scores_rebuild()} run scores" if runs else ""
        self.stdout.write(
            self.style.SUCCESS(f"rebuilt {count} problem standings{scored} in {time.perf_counter() - started:.1f} s")
        )
