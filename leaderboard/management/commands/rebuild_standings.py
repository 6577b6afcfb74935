"""Recomputes every stored standing (each problem's ranking line per profile, version and revision, and each
category's line on the home page) from the results, the way recording them one by one leaves them:

    python manage.py rebuild_standings

Run it once after the migration that adds the standings, and after rows were deleted or written outside the
services (an admin's delete, a restore)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from leaderboard.rankings.services import standings_rebuild


class Command(BaseCommand):
    help = "Recompute every problem's and category's stored standing from the results."

    def handle(self, *args, **options) -> None:
        started = time.perf_counter()
        count = standings_rebuild()
        self.stdout.write(self.style.SUCCESS(
            f"rebuilt {count} problem standings in {time.perf_counter() - started:.1f} s"))
