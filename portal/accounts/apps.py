from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "portal.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from leaderboard.submissions.signals import verdict_recorded
        from portal.accounts.services import username_key_keep, verdict_notify

        post_save.connect(username_key_keep, sender=get_user_model(), dispatch_uid="accounts-username-key")
        verdict_recorded.connect(verdict_notify, dispatch_uid="accounts-verdict-email")
