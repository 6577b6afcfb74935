"""``python manage.py export_datasets OUTDIR [--date YYYY-MM-DD] [--config NAME ...]``: the problems, prompt packs
and public results as JSONL and Parquet, in the layout Hugging Face ``datasets`` loads (leaderboard/datasets/)."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from leaderboard.datasets.export import CONFIGS, export_datasets


class Command(BaseCommand):
    help = "Export the problems, prompt packs and public results as datasets (JSONL and Parquet)."

    def add_arguments(self, parser):
        parser.add_argument("outdir")
        parser.add_argument(
            "--date", help="the export's date (default today); the same database and date give the same files"
        )
        parser.add_argument("--config", action="append", choices=list(CONFIGS), help="only this config (repeatable)")

    def handle(self, *args, **options):
        try:
            date = dt.date.fromisoformat(options["date"]) if options["date"] else None
        except ValueError as exc:
            raise CommandError(f"--date: {exc}") from exc
        out = export_datasets(options["outdir"], date=date, configs=options["config"])
        counts = ", ".join(f"{n} {c}" for c, n in out.counts.items())
        self.stdout.write(f"wrote {out.root} ({counts})")
