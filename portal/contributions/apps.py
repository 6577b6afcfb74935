from django.apps import AppConfig


class ContributionsConfig(AppConfig):
    name = "portal.contributions"
    label = "contributions"
    verbose_name = "Contributions"
    default_auto_field = "django.db.models.BigAutoField"
