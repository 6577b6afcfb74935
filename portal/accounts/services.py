"""Account writes: a new user, a new API token, the e-mail confirmation and the verdict notification; and the rule
every username follows.

A username may not hold control, bidi, zero-width or other invisible characters, and may not read like another
user's (``leaderboard.names.username_key``, stored in ``UsernameKey`` with a unique constraint, so two sign-ups of
"ada" and "аda" at the same moment cannot both succeed). ``username_check`` raises ValidationError({"username": ...}).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from leaderboard.names import invisible_character, username_key
from portal.accounts.models import AccountEmail, UsernameKey

logger = logging.getLogger(__name__)

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


def user_create(*, username: str, password: str, email: str = "", confirmed: bool = True):
    """A new user; ``confirmed=False`` (sign-up) keeps uploads closed until the mailed link is followed."""
    username_check(username)
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(username=username, password=password, email=email)
            if not confirmed:
                AccountEmail.objects.create(user=user, confirmed_at=None)
            return user
    except IntegrityError:  # the same or a look-alike name, taken a moment ago
        raise ValidationError({"username": TAKEN}) from None


@transaction.atomic
def token_regenerate(*, user) -> Token:
    """Replaces the user's API token with a new one; the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


# --- e-mail confirmation ----------------------------------------------------------------------------------------
#
# The link carries a signed token (django.core.signing) of the user's id and the address it was sent to, valid for
# PASSWORD_RESET_TIMEOUT seconds: a changed address makes old links useless. Until it is followed the user may log in
# and read everything, sees a banner, and may not upload (``may_upload``, through the auth back-end in backends.py).

CONFIRM_SALT = "portal.accounts.email-confirmation"


def email_confirmed(user) -> bool:
    """False only for a signed-up user who has not followed the link yet (users made otherwise count as confirmed)."""
    if not user.is_authenticated:
        return False
    return not AccountEmail.objects.filter(user_id=user.pk, confirmed_at__isnull=True).exists()


def may_upload(user) -> bool:
    return bool(user.is_active) and email_confirmed(user)


def confirmation_token(user) -> str:
    return signing.dumps({"u": user.pk, "e": user.email.lower()}, salt=CONFIRM_SALT, compress=True)


def confirmation_url(user) -> str:
    return settings.ARENA_SITE_URL + reverse("account-confirm", kwargs={"token": confirmation_token(user)})


def confirmation_send(*, user, base_url: str | None = None) -> None:
    """Mails the confirmation link (``base_url``: the site's address as the request saw it)."""
    path = reverse("account-confirm", kwargs={"token": confirmation_token(user)})
    link = (base_url.rstrip("/") if base_url else settings.ARENA_SITE_URL) + path
    days = max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)
    send_mail(
        "Confirm your e-mail address for Parallel Kernel Arena",
        f"Hello {user.get_username()},\n\nfollow this link to confirm your address and start uploading "
        f"solutions, model runs and problems:\n\n{link}\n\nThe link works for {days} day(s). If you did "
        "not sign up, ignore this message.\n",
        None,
        [user.email],
    )


@transaction.atomic
def email_confirm(*, token: str):
    """The user whose address the token confirms (now confirmed), else ValidationError (bad, expired or stale)."""
    try:
        data = signing.loads(token, salt=CONFIRM_SALT, max_age=settings.PASSWORD_RESET_TIMEOUT)
    except signing.SignatureExpired:
        raise ValidationError("This confirmation link has expired; send yourself a new one.") from None
    except signing.BadSignature:
        raise ValidationError("This confirmation link is not valid.") from None
    user = get_user_model().objects.filter(pk=data.get("u")).first()
    if user is None or user.email.lower() != data.get("e"):
        raise ValidationError("This confirmation link is for an address the account no longer has.")
    AccountEmail.objects.update_or_create(user=user, defaults={"confirmed_at": timezone.now()})
    return user


# --- notification when a verdict lands -------------------------------------------------------------------------


def notification_set(*, user, notify_verdicts: bool) -> AccountEmail:
    """Turns the verdict e-mail on or off (a user without a row gets one, confirmed: they were never asked)."""
    row, _ = AccountEmail.objects.get_or_create(user=user, defaults={"confirmed_at": timezone.now()})
    row.notify_verdicts = notify_verdicts
    row.save(update_fields=["notify_verdicts"])
    return row


def verdict_notify(sender=None, *, submission, result, **kwargs) -> bool:
    """Receiver of ``leaderboard.submissions.signals.verdict_recorded`` (after the commit): mails the owner of a solo
    submission its verdict when they asked for it and their address is confirmed. A model run's attempts mail
    nothing (a run has hundreds). A failing mail server is logged, never raised into the result's recording."""
    if submission.model_run_id is not None:
        return False
    row = AccountEmail.objects.filter(user_id=submission.user_id).select_related("user").first()
    if row is None or not row.notify_verdicts or row.confirmed_at is None or not row.user.email:
        return False
    speedup = f", speedup {result.speedup:.2f}x" if result.speedup is not None else ""
    link = settings.ARENA_SITE_URL + reverse("submission-detail", kwargs={"submission_id": submission.pk})
    message = (result.document or {}).get("message") if isinstance(result.document, dict) else ""
    body = (
        f"Submission #{submission.pk} ({submission.problem_id} on {submission.profile}): {result.verdict}{speedup}.\n"
    )
    if message:
        body += f"\n{str(message)[:2000]}\n"
    body += (
        f"\n{link}\n\nYou get this because verdict e-mails are on in your account settings: "
        f"{settings.ARENA_SITE_URL}{reverse('account-settings')}\n"
    )
    try:
        send_mail(f"#{submission.pk} {submission.problem_id}: {result.verdict}", body, None, [row.user.email])
    except Exception:  # noqa: BLE001  the verdict is stored; the mail is a courtesy
        logger.exception("verdict e-mail for submission %s not sent", submission.pk)
        return False
    return True
