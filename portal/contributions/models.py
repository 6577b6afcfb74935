"""Problem proposals: a contributor's problem folder, its CPU check and its review.

A proposal's progress runs submitted → checking → checked or failed (the check worker's verdict) → accepted or
rejected (a moderator's). Accepting never writes into ``problems/``: the catalogue is code-reviewed, so an
accepted proposal is downloaded as a zip of its folder and merged by pull request.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProblemProposal(models.Model):
    class State(models.TextChoices):
        SUBMITTED = "submitted"
        CHECKING = "checking"
        CHECKED = "checked"
        FAILED = "failed"
        ACCEPTED = "accepted"
        REJECTED = "rejected"

    OPEN_STATES = (State.SUBMITTED, State.CHECKING, State.CHECKED, State.FAILED)  # waiting for a moderator
    BADGES = {
        "submitted": "state-queued",
        "checking": "state-running",
        "checked": "verdict-passed",
        "failed": "verdict-wrong_output",
        "accepted": "verdict-passed",
        "rejected": "verdict-rejected",
    }

    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="problem_proposals")
    category = models.CharField(max_length=64)
    name = models.CharField(max_length=100, help_text="the folder name: lower-case letters, digits, underscores")
    title = models.CharField(max_length=200, help_text="from problem.toml")
    version = models.PositiveIntegerField(help_text="from problem.toml")
    problem_toml = models.TextField()
    reference_py = models.TextField()
    readme_md = models.TextField()
    solutions = models.JSONField(
        default=list, blank=True, help_text='known answers: [{"kind": "correct"|"wrong", "filename", "source"}]'
    )
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the three files, as the registry hashes")
    state = models.CharField(max_length=16, choices=State.choices, default=State.SUBMITTED, db_index=True)
    check_report = models.JSONField(null=True, blank=True)
    check_job_id = models.CharField(max_length=100, blank=True)
    check_count = models.PositiveIntegerField(default=0, help_text="checks enqueued so far")
    check_worker = models.CharField(max_length=200, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    moderator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    moderator_note = models.TextField(blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "portal_problemproposal"  # the table it had when it lived in the portal app
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"proposal #{self.pk}: {self.problem_id}"

    @property
    def problem_id(self) -> str:
        return f"{self.category}/{self.name}"

    @property
    def files(self) -> dict[str, str]:
        """The three files that define the problem, by their names in the folder."""
        return {"problem.toml": self.problem_toml, "reference.py": self.reference_py, "README.md": self.readme_md}

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES

    @property
    def is_checking(self) -> bool:
        return self.state in (self.State.SUBMITTED, self.State.CHECKING)

    @property
    def badge(self) -> str:
        return self.BADGES.get(self.state, "")
