"""Models of the ``leaderboard`` app that keep what a problem page and the ranking of runs read instead of computing it
per request (written by ``rankings.stored_figures``); ``leaderboard.models`` holds the others and exports these."""

from __future__ import annotations

from django.db import models


class MeasuredRoofline(models.Model):
    """The roofline the newest evaluation of a problem version on a profile reported (its document's ``roofline``),
    which the problem page shows where the site cannot compute one itself (an imported or demo problem). Kept by
    ``rankings.stored_figures.measured_roofline_after_result`` when a result is recorded, in the same transaction;
    ``rebuild_standings`` recomputes every row. ``time_us`` and ``bound`` hold the document's values as they are
    (JSON: a value that is not a number is stored, and shown as no roofline)."""

    problem = models.ForeignKey("leaderboard.Problem", on_delete=models.CASCADE, related_name="measured_rooflines")
    profile = models.CharField(max_length=64)
    problem_version = models.PositiveIntegerField()
    time_us = models.JSONField(null=True, blank=True)
    bound = models.JSONField(null=True, blank=True)
    recorded_at = models.DateTimeField(help_text="when the evaluation it comes from was recorded")
    submission_id = models.PositiveBigIntegerField(help_text="the evaluation it comes from")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["problem", "profile", "problem_version"], name="measured_roofline_unique")
        ]

    def __str__(self) -> str:
        return f"roofline of {self.problem_id} v{self.problem_version} on {self.profile}"


class MeasuredBaseline(models.Model):
    """The baseline's time on a profile as a problem page shows it: how many evaluations of the problem's version timed
    it (any verdict, re-measurements too) and the median of their medians (``statistics.median``). Kept by
    ``rankings.stored_figures.measured_baseline_after_result`` when a result with a baseline time is recorded, in the
    same transaction; ``rebuild_standings`` recomputes every row. No row: no evaluation timed it."""

    problem = models.ForeignKey("leaderboard.Problem", on_delete=models.CASCADE, related_name="measured_baselines")
    profile = models.CharField(max_length=64)
    problem_version = models.PositiveIntegerField()
    evaluations = models.PositiveIntegerField()
    median_us = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["problem", "profile", "problem_version"], name="measured_baseline_unique")
        ]

    def __str__(self) -> str:
        return f"baseline of {self.problem_id} v{self.problem_version} on {self.profile}"


class RunFilterChoice(models.Model):
    """A (hardware profile, precision, k) some model run has: the values the ranking's filters offer. Added when a
    run is uploaded, in the same transaction; removed when the last run with it is deleted; ``rebuild_standings``
    recomputes them from the runs."""

    profile = models.CharField(max_length=64)
    precision = models.CharField(max_length=32, blank=True)
    k = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["profile", "precision", "k"], name="run_filter_choice_unique")]

    def __str__(self) -> str:
        return f"{self.profile} · {self.precision or 'no precision'} · k={self.k}"


# The figures a rank range is read from (``rankings.standing.RANK_INTERVALS``' keys): the lower and upper ends of
# each are kept as columns ``<figure>_lows`` and ``<figure>_highs``.
RANK_FIGURES = ("pass_at_k", "fast_1", "fast_1_5", "fast_2", "speedup")


class RankingEnds(models.Model):
    """What the overall ranking of model runs reads of every run of one set of its filters (hardware, precision,
    protocol, k, published, and the API's owner; ``filters``: ``rankings.rank_ends.filters_key``): how many runs the
    filters keep and how many of them are ranked, and per figure the sorted lower and upper ends of the ranked runs'
    intervals, from which a page's rank ranges follow (``rankings.standing.set_rank_ranges``) without reading every
    run. Kept by ``rankings.rank_ends`` whenever a run or its score is saved or deleted, in the same transaction, for
    the sets of filters that run belongs to; ``rebuild_standings`` recomputes every row. No row: no run is kept by
    those filters. The ends are doubles, 8 bytes each, little-endian (``array("d")``), sorted as PostgreSQL sorts
    floats: exact, the same on SQLite and PostgreSQL, and read without parsing a number."""

    filters = models.CharField(max_length=400, unique=True)
    runs = models.PositiveIntegerField(help_text="runs these filters keep, any standing")
    ranked = models.PositiveIntegerField(help_text="of which ranked")
    pass_at_k_lows = models.BinaryField(default=b"")
    pass_at_k_highs = models.BinaryField(default=b"")
    fast_1_lows = models.BinaryField(default=b"")
    fast_1_highs = models.BinaryField(default=b"")
    fast_1_5_lows = models.BinaryField(default=b"")
    fast_1_5_highs = models.BinaryField(default=b"")
    fast_2_lows = models.BinaryField(default=b"")
    fast_2_highs = models.BinaryField(default=b"")
    speedup_lows = models.BinaryField(default=b"")
    speedup_highs = models.BinaryField(default=b"")

    class Meta:
        verbose_name_plural = "ranking ends"

    def __str__(self) -> str:
        return f"ranking ends of {self.filters}: {self.ranked} ranked of {self.runs}"
