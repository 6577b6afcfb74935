"""One table: the key that keeps usernames apart (``leaderboard.names.username_key``), unique, one row per user."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class UsernameKey(models.Model):
    """A user's username reduced to what a reader sees (NFKC, case folded, look-alikes mapped): no two users may share
    it, so nobody can take a name that reads as someone else's. Kept by a signal whenever a user is saved."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="username_key")
    key = models.CharField(max_length=600, unique=True)

    def __str__(self) -> str:
        return self.key
