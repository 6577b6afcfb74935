from django.core.management.base import BaseCommand, CommandError

from leaderboard.catalogue.services import problems_sync


class Command(BaseCommand):
    help = (
        "Mirrors the problem registry (problems/<category>/<name>/) into the database. Idempotent: run it "
        "after every deploy; problems that left the registry are deactivated, never deleted."
    )

    def handle(self, *args, **options):
        from problems.registry import ProblemError

        try:
            report = problems_sync()
        except ProblemError as exc:
            raise CommandError(f"the problem suite is invalid: {exc}") from exc
        for label, ids in (
            ("created", report.created),
            ("updated", report.updated),
            ("deactivated", report.deactivated),
        ):
            for problem_id in ids:
                self.stdout.write(f"{label}: {problem_id}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(report.created)} created, {len(report.updated)} updated, {len(report.unchanged)} unchanged, "
                f"{len(report.deactivated)} deactivated"
            )
        )
