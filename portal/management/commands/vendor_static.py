import shutil
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

VENDOR = Path(settings.BASE_DIR) / "static" / "vendor"


class Command(BaseCommand):
    help = (
        "Copies third-party browser assets from installed Python packages into static/vendor/ (not committed: "
        "plotly.min.js alone is ~4.5 MB). Run it before `runserver` and before `collectstatic`."
    )

    def handle(self, *args, **options):
        try:
            import plotly
        except ImportError as exc:
            raise CommandError("plotly is not installed; `pip install -r requirements.txt` first.") from exc
        source = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
        if not source.is_file():
            raise CommandError(f"{source} is missing from the installed plotly package; reinstall plotly.")
        VENDOR.mkdir(parents=True, exist_ok=True)
        target = VENDOR / "plotly.min.js"
        if (
            target.is_file()
            and target.stat().st_size == source.stat().st_size
            and target.read_bytes() == source.read_bytes()
        ):
            self.stdout.write(f"{target} is up to date (plotly {plotly.__version__})")
            return
        shutil.copyfile(source, target)
        self.stdout.write(self.style.SUCCESS(f"copied plotly {plotly.__version__} to {target}"))
