"""Who may upload (a solution, a model run, a test, a problem proposal): users with the permission
``leaderboard.upload``. The project's auth back-ends grant it (``portal.accounts.backends``: a confirmed e-mail
address); this module only asks, so the web room needs nothing from the accounts above it."""

from __future__ import annotations

from functools import wraps

from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

UPLOAD_PERMISSION = "leaderboard.upload"
NOT_CONFIRMED = (
    "Confirm your e-mail address before uploading: follow the link in the mail sent at sign-up, or send "
    "a new one from /accounts/settings/."
)


def may_upload(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(UPLOAD_PERMISSION))


def upload_permission_required(view):
    """For a page that uploads (after login_required): 403 with the reason for a user who may not upload yet."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not may_upload(request.user):
            raise PermissionDenied(NOT_CONFIRMED)
        return view(request, *args, **kwargs)

    return wrapper


class MayUpload(BasePermission):
    """For an API view that uploads (after IsAuthenticated): reads pass, writes need the permission."""

    message = NOT_CONFIRMED

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or may_upload(request.user)
