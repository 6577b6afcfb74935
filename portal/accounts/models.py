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


class AccountEmail(models.Model):
    """A signed-up user's e-mail confirmation and notification setting. Sign-up makes the row unconfirmed; the link
    mailed then (``services.confirmation_send``) confirms it. A user without a row was made by an administrator
    (``createsuperuser``, the admin, a script): counted as confirmed, never notified until they opt in."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account_email")
    confirmed_at = models.DateTimeField(null=True, blank=True)
    notify_verdicts = models.BooleanField(default=False, help_text="E-mail the user when a verdict lands.")

    def __str__(self) -> str:
        return f"{self.user_id}: {'confirmed' if self.confirmed_at else 'unconfirmed'}"
