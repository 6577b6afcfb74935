"""What every page's header needs to know about moderation: whether to show the review-queue and admin links."""

from __future__ import annotations

from django.http import HttpRequest

from portal.contributions.selectors import is_moderator


def moderation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    # A callable: templates call it only where the header asks, so pages for anonymous readers make no query.
    return {"is_moderator": lambda: is_moderator(user)}
