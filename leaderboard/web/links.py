"""URL prefixes for the links of long tables: one ``reverse()`` per page instead of one per row."""

from __future__ import annotations

from django.urls import reverse


def url_prefixes() -> dict[str, str]:
    """The prefixes of a run's, a user's, the submissions' and a problem's URLs, for templates to append ids to."""
    return {
        "runs_url": reverse("model-run-list"),
        "users_url": reverse("user-detail", args=["x"])[:-2],
        "submissions_url": reverse("submission-list"),
        "problems_url": reverse("problem-detail", args=["a/b"])[:-4],
    }
