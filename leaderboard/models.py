"""Problems (mirrored from the registry), submissions and their results.

A submission's progress (``state``) is kept apart from its outcome (``verdict``). Names leave room for
model runs: a later ``Submission.model_run`` nullable foreign key ties the k attempts of one run together.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluator.profiles import PROFILES
from evaluator.result import Verdict

VERDICT_CHOICES = [(v.value, v.value.replace("_", " ")) for v in Verdict]


class Problem(models.Model):
    """One problem of the suite as the registry last described it; ``load_problems`` keeps it in sync."""

    id = models.CharField(primary_key=True, max_length=200, help_text="category/name, e.g. collectives/all_reduce")
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=64, db_index=True)
    summary = models.TextField(blank=True)
    version = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    statement = models.TextField(help_text="markdown")
    reference_source = models.TextField()
    codebase = models.CharField(max_length=200, blank=True)
    function = models.CharField(max_length=500, blank=True)
    world_sizes = models.JSONField(default=list)
    presets = models.JSONField(default=dict)
    tolerances = models.JSONField(default=dict)
    roofline = models.JSONField(default=dict)
    suite = models.CharField(max_length=64, default="arena")
    is_active = models.BooleanField(default=True, help_text="false once the folder left the registry")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["category", "title"]

    def __str__(self) -> str:
        return self.id

    def supports(self, profile_name: str) -> bool:
        profile = PROFILES.get(profile_name)
        return profile is not None and profile.world_size in self.world_sizes

    @property
    def supported_profiles(self) -> list[str]:
        return [name for name in PROFILES if self.supports(name)]


class Submission(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        FINISHED = "finished"
        CANCELLED = "cancelled"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="submissions")
    # A name from evaluator.profiles.PROFILES (validated by the service; no choices here, so adding a profile
    # needs no migration).
    profile = models.CharField(max_length=64, db_index=True)
    # The problem as it was when the solution was submitted; the worker refuses another version.
    problem_version = models.PositiveIntegerField()
    problem_hash = models.CharField(max_length=64)
    filename = models.CharField(max_length=255)
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)

    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    verdict = models.CharField(max_length=32, choices=VERDICT_CHOICES, null=True, blank=True)

    # Queue bookkeeping: the reaper compares these with what Redis holds.
    job_id = models.CharField(max_length=100, blank=True)
    enqueue_count = models.PositiveIntegerField(default=0)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    job_timeout_s = models.PositiveIntegerField(help_text="the RQ job's limit, 1.2× the evaluator's phase limits")

    worker = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["problem", "profile", "verdict"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.problem_id} on {self.profile} ({self.verdict or self.state})"

    @property
    def is_done(self) -> bool:
        return self.state in (self.State.FINISHED, self.State.CANCELLED)


class Result(models.Model):
    """The evaluator's whole document, plus the columns rankings sort and filter on."""

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="result",
                                      primary_key=True)
    document = models.JSONField()
    verdict = models.CharField(max_length=32, choices=VERDICT_CHOICES)
    speedup = models.FloatField(null=True, blank=True, db_index=True)
    speedup_ci_low = models.FloatField(null=True, blank=True)
    speedup_ci_high = models.FloatField(null=True, blank=True)
    baseline_median_us = models.FloatField(null=True, blank=True)
    solution_median_us = models.FloatField(null=True, blank=True)
    roofline_fraction = models.FloatField(null=True, blank=True, help_text="roofline time / solution time")
    problem_version = models.PositiveIntegerField(null=True, blank=True)
    problem_hash = models.CharField(max_length=64, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"result of #{self.submission_id}: {self.verdict}"
