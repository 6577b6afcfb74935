"""plotly is served from our own static files, copied from the installed package (never from a CDN)."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.conf import settings
from django.core.management import call_command


def test_vendor_static_copies_plotly_from_the_installed_package(capsys):
    call_command("vendor_static")
    target = Path(settings.BASE_DIR) / "static" / "vendor" / "plotly.min.js"
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert target.read_bytes() == source.read_bytes()
    call_command("vendor_static")
    assert "up to date" in capsys.readouterr().out
