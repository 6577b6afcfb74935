"""Account writes: a new user, a new API token; and the rule every username follows.

A username may not hold control, bidi, zero-width or other invisible characters, and may not read like another
user's (``leaderboard.names.username_key``, stored in ``UsernameKey`` with a unique constraint, so two sign-ups of
"ada" and "аda" at the same moment cannot both succeed). ``username_check`` raises ValidationError({"username": ...}).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from leaderboard.names import invisible_character, username_key
from portal.accounts.models import UsernameKey

TAKEN = "That username is taken, or reads like one that is; choose another."


def username_check(username: str, *, user_id: int | None = None) -> str:
    """The username if anyone may take it (``user_id``: the user renaming themself), else ValidationError."""
    bad = invisible_character(username)
    if bad:
        raise ValidationError({"username": f"A username cannot contain {bad}; use letters, digits and @ . + - _."})
    clash = UsernameKey.objects.filter(key=username_key(username))
    if user_id is not None:
        clash = clash.exclude(user_id=user_id)
    if clash.exists():
        raise ValidationError({"username": TAKEN})
    return username


def username_key_keep(sender, instance, **kwargs) -> None:
    """After a user is saved (sign-up, admin, createsuperuser): store its key; a clash refuses the save."""
    key = username_key(instance.get_username())
    try:
        with transaction.atomic():
            UsernameKey.objects.update_or_create(user_id=instance.pk, defaults={"key": key})
    except IntegrityError:
        raise ValidationError({"username": TAKEN}) from None


def user_create(*, username: str, password: str, email: str = ""):
    username_check(username)
    try:
        with transaction.atomic():
            return get_user_model().objects.create_user(username=username, password=password, email=email)
    except IntegrityError:  # the same or a look-alike name, taken a moment ago
        raise ValidationError({"username": TAKEN}) from None


@transaction.atomic
def token_regenerate(*, user) -> Token:
    """Replaces the user's API token with a new one; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
