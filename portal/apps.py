from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        from portal import db_loaders

        db_loaders.install()  # timestamps parsed by psycopg's compiled loader (same values, less CPU)
