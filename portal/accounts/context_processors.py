"""The banner of an account whose e-mail address is not confirmed yet (every page, while signed in)."""

from __future__ import annotations

from django.http import HttpRequest


def email_confirmation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from portal.accounts.services import email_confirmed

    return {"email_unconfirmed": not email_confirmed(user)}
