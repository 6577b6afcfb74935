"""Account writes: a new user, a new API token."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token


def user_create(*, username: str, password: str, email: str = ""):
    return get_user_model().objects.create_user(username=username, password=password, email=email)


@transaction.atomic
def token_regenerate(*, user) -> Token:
    """Replaces the user's API token with a new one; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
