from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_save

        from leaderboard.models import ModelRun, RunScore
        from leaderboard.rankings import rank_ends, stored_figures

        # The values the runs' filters offer follow the runs whichever way a run is written or deleted (the upload,
        # the admin, a user's deletion cascading to their runs); bulk writes are followed by `rebuild_standings`.
        def run_saved(sender, instance, created, update_fields=None, **kwargs) -> None:
            stored_figures.run_filter_choices_after_save(run=instance, created=created, update_fields=update_fields)

        def run_deleted(sender, instance, **kwargs) -> None:
            stored_figures.run_filter_choices_after_delete(run=instance)
            rank_ends.rank_ends_after_run_deleted(run=instance)

        # The ranking's counts and interval ends per set of filters (``RankingEnds``) follow the runs and their scores
        # the same way: the scoring job's write, publishing, the admin, a cascade.
        def run_saving(sender, instance, update_fields=None, **kwargs) -> None:
            rank_ends.rank_ends_before_run_saved(run=instance, update_fields=update_fields)

        def run_ends_saved(sender, instance, created, update_fields=None, **kwargs) -> None:
            rank_ends.rank_ends_after_run_saved(run=instance, created=created, update_fields=update_fields)

        def score_saving(sender, instance, **kwargs) -> None:
            rank_ends.rank_ends_before_score_saved(score=instance)

        def score_saved(sender, instance, **kwargs) -> None:
            rank_ends.rank_ends_after_score_changed(score=instance)

        def score_deleted(sender, instance, **kwargs) -> None:
            rank_ends.rank_ends_after_score_changed(score=instance, deleted=True)

        post_save.connect(run_saved, sender=ModelRun, dispatch_uid="run_filter_choices_saved", weak=False)
        post_delete.connect(run_deleted, sender=ModelRun, dispatch_uid="run_filter_choices_deleted", weak=False)
        pre_save.connect(run_saving, sender=ModelRun, dispatch_uid="rank_ends_run_saving", weak=False)
        post_save.connect(run_ends_saved, sender=ModelRun, dispatch_uid="rank_ends_run_saved", weak=False)
        pre_save.connect(score_saving, sender=RunScore, dispatch_uid="rank_ends_score_saving", weak=False)
        post_save.connect(score_saved, sender=RunScore, dispatch_uid="rank_ends_score_saved", weak=False)
        post_delete.connect(score_deleted, sender=RunScore, dispatch_uid="rank_ends_score_deleted", weak=False)
