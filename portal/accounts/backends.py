"""Who may upload: the permission ``leaderboard.upload`` that ``leaderboard.web.permissions`` asks Django's auth for,
granted here to active users whose e-mail address is confirmed (``services.may_upload``). Authenticates nobody."""

from __future__ import annotations

UPLOAD_PERMISSION = "leaderboard.upload"


class UploadPermissionBackend:
    def authenticate(self, request, **credentials):
        return None

    def get_user(self, user_id):
        return None

    def has_perm(self, user_obj, perm, obj=None) -> bool:
        if perm != UPLOAD_PERMISSION:
            return False
        from portal.accounts.services import may_upload

        return may_upload(user_obj)
