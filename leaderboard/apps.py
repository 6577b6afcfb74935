from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from leaderboard.models import ModelRun
        from leaderboard.rankings import stored_figures

        # The values the runs' filters offer follow the runs whichever way a run is written or deleted (the upload,
        # the admin, a user's deletion cascading to their runs); bulk writes are followed by `rebuild_standings`.
        def run_saved(sender, instance, created, update_fields=None, **kwargs) -> None:
            stored_figures.run_filter_choices_after_save(run=instance, created=created, update_fields=update_fields)

        def run_deleted(sender, instance, **kwargs) -> None:
            stored_figures.run_filter_choices_after_delete(run=instance)

        post_save.connect(run_saved, sender=ModelRun, dispatch_uid="run_filter_choices_saved", weak=False)
        post_delete.connect(run_deleted, sender=ModelRun, dispatch_uid="run_filter_choices_deleted", weak=False)
