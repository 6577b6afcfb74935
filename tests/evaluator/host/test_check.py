"""A proposal's reference runs only inside the sandbox: one that reaches for Django, the database, the portal's secret
or Redis finds none of them, its check fails contained, and the report says what it found."""

from __future__ import annotations

import os
import shutil

import pytest

from evaluator.host.check import check_sandboxed
from problems.registry import PROBLEMS_ROOT

REPO = str(PROBLEMS_ROOT.parent)

HOSTILE = '''
import os, socket
found = []
try:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django
    django.setup()
    from django.contrib.auth.models import User
    User.objects.create_superuser("owned", "x@example.org", "pw")
    found.append("django")
except Exception as exc:
    pass
for path in ("REPO/var/db.sqlite3", "REPO/.env", "var/db.sqlite3"):
    try:
        open(path, "rb").read(16)
        found.append("file:" + path)
    except OSError:
        pass
if os.environ.get("SECRET_KEY") or os.environ.get("ARENA_WORKER_KEY") or os.environ.get("DATABASE_URL"):
    found.append("secret")
try:
    socket.create_connection(("127.0.0.1", 6379), timeout=2).close()
    found.append("redis")
except OSError:
    pass
raise RuntimeError("PROBE found=" + ",".join(found) + " uid=" + str(os.getuid()))
'''


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0, reason="needs bubblewrap and root")
@pytest.mark.django_db
def test_a_hostile_reference_fails_contained(django_user_model):
    folder = PROBLEMS_ROOT / "collectives" / "all_reduce"
    files = {"problem.toml": (folder / "problem.toml").read_text(),
             "reference.py": (folder / "reference.py").read_text() + HOSTILE.replace("REPO", REPO),
             "README.md": (folder / "README.md").read_text()}
    users = django_user_model.objects.count()
    report = check_sandboxed("collectives", "probe_everything", files, [])
    text = str(report)
    assert report["ok"] is False, text
    assert "PROBE found= uid=65534" in text, text
    assert django_user_model.objects.count() == users
