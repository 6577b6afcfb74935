import time

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection
from redis.exceptions import RedisError

from leaderboard.lifecycle.reaper import reap_every_kind
from leaderboard.submissions.reaper import SUBMISSIONS
from leaderboard.testmode.reaper import TESTS
from portal.contributions.reaper import CHECKS

REAPERS = (SUBMISSIONS, CHECKS, TESTS)  # every kind of queued work (leaderboard.lifecycle), one pass each


class Command(BaseCommand):
    help = (
        "Makes the queues agree with the database, for evaluations and proposal checks alike: re-enqueues "
        "queued work whose RQ job Redis lost, fails (infra_error for a submission, failed for a proposal) work "
        "whose worker went silent past its limit or whose job died, and recovers results whose reply was lost; "
        "unranked tests that no worker answered in time end as infra_error. "
        "Run it periodically: from cron every minute (`* * * * * cd /srv/arena && .venv/bin/python manage.py "
        "reap`), or as a long-lived process with `python manage.py reap --every 60`."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--every",
            type=float,
            default=0,
            metavar="SECONDS",
            help="keep running, reaping every SECONDS (default: reap once and exit)",
        )

    def handle(self, *args, every: float = 0, **options):
        while True:
            try:
                for report in reap_every_kind(REAPERS):
                    if report.changed or options["verbosity"] > 1:
                        self.stdout.write(str(report))
            except (DatabaseError, RedisError) as exc:
                # A long-lived reaper outlives a busy or restarting database or Redis (SQLite's "database is
                # locked" while another command writes): one line, and the next pass, instead of dying for good.
                if not every:
                    raise
                connection.close()
                self.stderr.write(f"reap: this pass failed ({type(exc).__name__}: {exc}); the next runs in {every:g} s")
            if not every:
                return
            time.sleep(every)
