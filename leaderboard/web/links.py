"""URL prefixes for the links of long tables: one ``reverse()`` per page instead of one per row."""

from __future__ import annotations

from typing import Any

from django.urls import get_script_prefix, get_urlconf, reverse

from leaderboard.web import form_memo

# The prefixes by what ``reverse`` reads besides the names: the settings (a test's change counted), the prefix the site
# is served under and the URL configuration. Four ``reverse()`` calls were a twentieth of a problem page.
_FOUND: dict[Any, dict[str, str]] = {}


def url_prefixes() -> dict[str, str]:
    """The prefixes of a run's, a user's, the submissions' and a problem's URLs, for templates to append ids to
    (found once per process for each prefix and URL configuration)."""
    key = (form_memo.settings_changes(), get_script_prefix(), get_urlconf())
    found = _FOUND.get(key)
    if found is None:
        if len(_FOUND) >= 64:
            _FOUND.clear()
        found = _FOUND[key] = {
            "runs_url": reverse("model-run-list"),
            "users_url": reverse("user-detail", args=["x"])[:-2],
            "submissions_url": reverse("submission-list"),
            "problems_url": reverse("problem-detail", args=["a/b"])[:-4],
        }
    return dict(found)
