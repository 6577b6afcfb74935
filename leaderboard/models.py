"""Problems (mirrored from the registry), submissions and their results.

A submission's progress (``state``) is kept apart from its outcome (``verdict``). A model run's k attempts per
problem are ordinary submissions tied to their ``ModelRun`` by ``Submission.model_run`` and numbered by
``Submission.attempt``; ``RunScore`` holds the run's scores, recomputed by a service whenever a result lands.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models

from evaluator.contract import states
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict
from leaderboard.sort_indexes import ranked_sort_indexes, run_sort_indexes

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
    hard = models.CharField(max_length=200, blank=True, help_text="why this is hard, one short line")
    communication = models.CharField(max_length=200, blank=True, help_text="what communication it needs")
    # Lower-case tags between commas (",inter-node,moe,"), so one tag filters with a plain substring match on every
    # database; ``tag_list`` reads them back.
    tags = models.CharField(max_length=500, blank=True, db_index=True, help_text="comma-separated, e.g. inter-node")
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

    @property
    def tag_list(self) -> list[str]:
        return [t for t in self.tags.split(",") if t]

    @staticmethod
    def tags_column(tags) -> str:
        """How ``tags`` stores a list of tags."""
        return f",{','.join(tags)}," if tags else ""


class QueuedWork:
    """What every kind of queued work (a submission, a model run, a test) says about its ``state``, whose values are
    ``evaluator.contract.states``'s."""

    state: str

    @property
    def is_done(self) -> bool:
        return states.is_done(self.state)


class EvaluatedSource(QueuedWork, models.Model):
    """What a submission and a test share: one file of source evaluated against one problem on one profile, as queued
    work (its job, its worker, its times). Each kind adds its owner and problem (their reverse names differ), its
    states and what is its own; :meth:`for_source` makes an unsaved row of either from validated source."""

    # A name from evaluator.contract.profiles.PROFILES (validated by the service; no choices here, so adding a profile
    # needs no migration).
    profile = models.CharField(max_length=64, db_index=True)
    # The problem as it was when the solution was uploaded; the worker refuses another version.
    problem_version = models.PositiveIntegerField()
    problem_hash = models.CharField(max_length=64)
    filename = models.CharField(max_length=255)
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)

    verdict = models.CharField(max_length=32, choices=VERDICT_CHOICES, null=True, blank=True)

    # Queue bookkeeping: the reaper compares these with what Redis holds.
    job_id = models.CharField(max_length=100, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    job_timeout_s = models.PositiveIntegerField(help_text="the RQ job's limit, 1.2× the evaluator's phase limits")

    worker = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @classmethod
    def for_source(cls, user, problem: Problem, profile: str, filename: str, text: str, *, job_timeout_s: int, **own):
        """An unsaved row of ``text`` (validated source) for ``problem`` on ``profile``, the problem's version and
        content hash as they are now; ``own`` sets the kind's own fields."""
        return cls(
            user=user,
            problem=problem,
            profile=profile,
            problem_version=problem.version,
            problem_hash=problem.content_hash,
            filename=filename,
            source=text,
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            job_timeout_s=job_timeout_s,
            **own,
        )


class ModelRun(QueuedWork, models.Model):
    """One uploaded model run: the manifest's protocol and provenance, and its progress over its attempts."""

    class State(models.TextChoices):
        QUEUED = states.QUEUED
        RUNNING = states.RUNNING
        FINISHED = states.FINISHED

    class Mode(models.TextChoices):
        ZERO_SHOT = "zero-shot"
        AGENTIC = "agentic"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_runs")
    model = models.CharField(max_length=200, help_text="the model's name, e.g. acme-coder-70b")
    provider = models.CharField(max_length=200, blank=True)
    # The protocol: every score is shown beside it.
    mode = models.CharField(max_length=16, choices=Mode.choices, db_index=True)
    k = models.PositiveSmallIntegerField(db_index=True, help_text="attempts per problem")
    turn_budget = models.PositiveIntegerField(default=0, help_text="agent turns per attempt; 0 for zero-shot")
    tokens = models.PositiveBigIntegerField(default=0, help_text="tokens the whole run spent")
    wall_time_s = models.FloatField(default=0, help_text="wall time the whole run spent, seconds")
    # The protocol in one line (``scores.stored_protocol_label``), written when the run is created and by
    # ``rebuild_standings``: every table of runs shows it, and a page does not rebuild it per row. "" when not
    # written (a row made outside the services): readers compute it then.
    protocol_label = models.CharField(max_length=200, blank=True, default="", help_text="the protocol in one line")
    profile = models.CharField(max_length=64, db_index=True, help_text="hardware profile its attempts run on")
    precision = models.CharField(
        max_length=32,
        blank=True,
        db_index=True,
        help_text="the numeric precision the run targeted, e.g. bf16 (manifest)",
    )
    suite = models.CharField(max_length=64, default="arena", help_text="the problem suite the run attempted")
    suite_version = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="the version of its suite the run answered (manifest; default: the "
        "suite's version at upload); only runs of the current one are ranked",
    )
    run_date = models.DateField(null=True, blank=True, help_text="when the attempts were generated")
    open_weights = models.BooleanField(null=True, blank=True)
    notes = models.TextField(blank=True)
    manifest = models.JSONField(default=dict, help_text="the manifest as uploaded (validated)")
    archive_name = models.CharField(max_length=255, blank=True)
    archive_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    is_demo = models.BooleanField(default=False, help_text="made up by `seed_demo`; never a real model run")
    published_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="set when the owner published its attempts and trajectories"
    )

    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    attempts_total = models.PositiveIntegerField(default=0)
    attempts_done = models.PositiveIntegerField(default=0, help_text="finished or cancelled attempts")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Since when an attempt settled that the run's score and progress do not count yet: one job on the web queue
    # scores the run for every attempt that settled in the meantime (``rankings.services.run_score_mark_stale``).
    score_stale_since = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = run_sort_indexes()  # the ranking's orders by a column of the run

    def __str__(self) -> str:
        return f"run #{self.pk}: {self.model} ({self.mode}, k={self.k}) on {self.profile}"


class Submission(EvaluatedSource):
    class State(models.TextChoices):
        QUEUED = states.QUEUED
        RUNNING = states.RUNNING
        FINISHED = states.FINISHED
        CANCELLED = states.CANCELLED

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="submissions")
    # The source with comments, blank lines and layout removed, hashed (``submissions.fingerprint``): rankings show
    # one row per distinct solution and pool the evaluations of the same code.
    source_key = models.CharField(max_length=64, blank=True, db_index=True)

    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    # Set on a re-measurement: the evaluation whose figure it checks (same source, problem and profile, queued again
    # later). A re-measurement is never ranked itself; it verifies or flags its original.
    remeasure_of = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="remeasurements"
    )

    # Set for the attempts of a model run: which run, and which of its k attempts at this problem (1..k).
    model_run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, null=True, blank=True, related_name="attempts")
    attempt = models.PositiveSmallIntegerField(null=True, blank=True)

    enqueue_count = models.PositiveIntegerField(default=0)  # jobs given so far (retries of platform failures)

    published_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="set when the owner published the source; readable by everyone"
    )

    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta(EvaluatedSource.Meta):
        indexes = [models.Index(fields=["problem", "profile", "verdict"])]
        constraints = [
            models.UniqueConstraint(
                fields=["model_run", "problem", "attempt"],
                name="one_submission_per_attempt",
                condition=models.Q(model_run__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.problem_id} on {self.profile} ({self.verdict or self.state})"

    @property
    def is_published(self) -> bool:
        """Its source is public: published by itself, or as an attempt of a published model run."""
        if self.published_at is not None:
            return True
        return self.model_run_id is not None and self.model_run.published_at is not None


class Result(models.Model):
    """The evaluator's whole document, plus the columns rankings sort and filter on."""

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="result", primary_key=True)
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
    # timing.protocol_revision and timing.speedup_estimator of the document: figures of different revisions are
    # never ranked together; the estimator says how the speedup was formed.
    protocol_revision = models.PositiveSmallIntegerField(null=True, blank=True, db_index=True)
    speedup_estimator = models.CharField(max_length=255, blank=True)
    worker = models.CharField(max_length=255, blank=True, help_text="the host that measured it")
    recorded_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"result of #{self.submission_id}: {self.verdict}"


class Trajectory(models.Model):
    """A trajectory file a model run shipped for one attempt (the agent's transcript, tool calls, ...)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="trajectories")
    filename = models.CharField(max_length=255, help_text="its path inside the archive")
    format = models.CharField(max_length=8, help_text="json, jsonl, md or txt")
    content = models.TextField()
    size = models.PositiveIntegerField(help_text="bytes")

    class Meta:
        ordering = ["submission_id", "filename"]
        verbose_name_plural = "trajectories"

    def __str__(self) -> str:
        return f"{self.filename} of #{self.submission_id}"


class RunScore(models.Model):
    """A model run's scores, precomputed by ``services.run_score_refresh`` whenever one of its results lands,
    so ranking pages read one row per run. Scores are at the run's own k (``k``), with pass@1 estimated from
    the same attempts beside them; ``leaderboard.metrics`` defines every figure."""

    model_run = models.OneToOneField(ModelRun, on_delete=models.CASCADE, primary_key=True, related_name="score")
    k = models.PositiveSmallIntegerField()
    pass_at_1 = models.FloatField(null=True, blank=True, db_index=True)
    pass_at_k = models.FloatField(null=True, blank=True, db_index=True)
    fast_1_at_k = models.FloatField(null=True, blank=True, help_text="fast_1.0@k")
    fast_1_5_at_k = models.FloatField(null=True, blank=True, help_text="fast_1.5@k")
    fast_2_at_k = models.FloatField(null=True, blank=True, help_text="fast_2.0@k")
    geomean_speedup = models.FloatField(null=True, blank=True)
    mean_roofline_fraction = models.FloatField(null=True, blank=True)
    problems_scored = models.PositiveIntegerField(default=0)
    problems_not_scorable = models.PositiveIntegerField(default=0)
    problems_not_attempted = models.PositiveIntegerField(default=0)
    coverage = models.FloatField(null=True, blank=True)
    correct_attempts = models.PositiveIntegerField(default=0)
    # 95 % bootstrap intervals over problems (``metrics.bootstrap_interval``).
    pass_at_k_low = models.FloatField(null=True, blank=True)
    pass_at_k_high = models.FloatField(null=True, blank=True)
    fast_1_low = models.FloatField(null=True, blank=True)
    fast_1_high = models.FloatField(null=True, blank=True)
    fast_1_5_low = models.FloatField(null=True, blank=True)
    fast_1_5_high = models.FloatField(null=True, blank=True)
    fast_2_low = models.FloatField(null=True, blank=True)
    fast_2_high = models.FloatField(null=True, blank=True)
    geomean_low = models.FloatField(null=True, blank=True)
    geomean_high = models.FloatField(null=True, blank=True)
    # Whether the run enters the overall ranking (``rankings.standing.RANKED``) or why not; ``timed``: its profile
    # measures speed (CPU profiles give verdicts only); ``protocol_revision``: the timing revision of its attempts.
    status = models.CharField(max_length=16, default="unfinished", db_index=True)
    timed = models.BooleanField(default=True)
    protocol_revision = models.PositiveSmallIntegerField(null=True, blank=True)
    by_category = models.JSONField(default=dict)
    # The whole score as the run's page and the comparison show it, intervals included, and its curves (pass@k
    # against k, fast_p against p): ``rankings.scores.score_record``; written with the row, never in a request.
    detail = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = ranked_sort_indexes()  # the ranking's orders by a score figure, over the ranked runs

    def __str__(self) -> str:
        return f"score of run #{self.model_run_id}: pass@{self.k}={self.pass_at_k}"


class RunComparison(models.Model):
    """Two runs compared at the smaller of their ks: both scores at that k and the paired differences with their
    bootstrap intervals (``rankings.scores.comparison_record``). Written by a job on the web queue
    (``rankings.services.run_comparison_refresh``), never in a request: a bootstrap over problems costs a page
    hundreds of milliseconds. It is current while both runs' RunScore rows are the ones it was computed from
    (``a_scored_at``, ``b_scored_at``: their ``updated_at``); a newer score makes the page ask for it again."""

    a = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="+")
    b = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="+")
    a_scored_at = models.DateTimeField(null=True, blank=True)
    b_scored_at = models.DateTimeField(null=True, blank=True)
    record = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["a", "b"], name="run_comparison_pair")]

    def __str__(self) -> str:
        return f"comparison of runs #{self.a_id} and #{self.b_id}"


class ProblemStanding(models.Model):
    """One problem's ranking on one profile, problem version and timing protocol revision, as it stands: what the
    home page shows of it (leader, best speedup, number of ranked solutions) and how many passed evaluations it has
    (which profile and revision speak for the problem). Kept by ``rankings.services.problem_standing_refresh`` when
    a passed result is recorded, in the same transaction; ``rebuild_standings`` recomputes every row.

    A version or revision the result did not record is stored as 0 (the columns are part of the unique key)."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="standings")
    profile = models.CharField(max_length=64)
    problem_version = models.PositiveIntegerField(help_text="0: not recorded")
    protocol_revision = models.PositiveSmallIntegerField(help_text="0: not recorded")
    passed = models.PositiveIntegerField(default=0, help_text="passed evaluations, re-measurements left out")
    solutions = models.PositiveIntegerField(default=0, help_text="rows of the ranking (each entrant's best)")
    # The ranking's first row (``rankings.selectors.problem_ranking``); empty when the ranking is.
    leader_submission_id = models.PositiveBigIntegerField(null=True, blank=True)
    leader_user_id = models.PositiveBigIntegerField(null=True, blank=True)
    leader_username = models.CharField(max_length=150, blank=True)
    leader_model_run_id = models.PositiveBigIntegerField(null=True, blank=True)
    leader_model = models.CharField(max_length=200, blank=True)
    best_speedup = models.FloatField(null=True, blank=True, help_text="the leader's pooled speedup")
    # The problem page's chart of the best speedup over time: each row of the ranking that beat every earlier one,
    # in submission order, as [submitted_at (ISO 8601), speedup, name shown, submission id].
    # (a database default too, so a web process of the previous release, which writes no history, can still insert a
    # row while a deployment is under way)
    history = models.JSONField(default=list, blank=True, db_default=models.Value([], output_field=models.JSONField()))
    # Every passed evaluation's speedup, re-measurements left out, in ascending order: the problem page's
    # distribution of speedups (a database default as ``history``'s).
    speedups = models.JSONField(default=list, blank=True, db_default=models.Value([], output_field=models.JSONField()))
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["problem", "profile", "problem_version", "protocol_revision"], name="problem_standing_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.problem_id} on {self.profile} v{self.problem_version} r{self.protocol_revision}"


class StandingEntry(models.Model):
    """One row of a problem's ranking (``rankings.solutions.RankingEntry``) as its ``ProblemStanding`` keeps it:
    written with the standing when a passed result of it is recorded, so the problem page, its exports and the API
    page through rows in the database instead of ranking every evaluation per request. Who re-measured a row is
    read with the page (``rankings.ranking_rows``): re-measurements are queued and settle outside ingest."""

    standing = models.ForeignKey(ProblemStanding, on_delete=models.CASCADE, related_name="entries")
    rank = models.PositiveIntegerField()
    rank_best = models.PositiveIntegerField(null=True, blank=True)
    rank_worst = models.PositiveIntegerField(null=True, blank=True)
    username = models.CharField(max_length=150)
    user_id = models.PositiveBigIntegerField()
    submission_id = models.PositiveBigIntegerField(help_text="the first evaluation of this solution")
    submission_ids = models.JSONField(default=list, help_text="every evaluation pooled into the row")
    workers = models.JSONField(default=list, help_text="the hosts that measured those evaluations")
    speedup = models.FloatField(null=True, blank=True)
    speedup_ci_low = models.FloatField(null=True, blank=True)
    speedup_ci_high = models.FloatField(null=True, blank=True)
    baseline_median_us = models.FloatField(null=True, blank=True)
    solution_median_us = models.FloatField(null=True, blank=True)
    roofline_fraction = models.FloatField(null=True, blank=True)
    submitted_at = models.DateTimeField()
    model_run_id = models.PositiveBigIntegerField(null=True, blank=True)
    model = models.CharField(max_length=200, blank=True)
    protocol = models.CharField(max_length=300, blank=True)
    evaluations = models.PositiveIntegerField(default=1)
    source_key = models.CharField(max_length=100, blank=True)
    estimator = models.CharField(max_length=100, blank=True)
    protocol_revision = models.PositiveSmallIntegerField(null=True, blank=True)
    problem_version = models.PositiveIntegerField(null=True, blank=True)
    timed = models.BooleanField(default=True)
    # Sort keys of the table's text columns as the page sorted them in Python (lower case; none when empty).
    who_key = models.CharField(max_length=200)
    protocol_key = models.CharField(max_length=300, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["standing", "rank"], name="standing_entry_rank")]

    def __str__(self) -> str:
        return f"#{self.rank} of {self.standing_id}: {self.model or self.username}"


class CategoryStanding(models.Model):
    """A category's line on the home page over its active problems (each on the profile that speaks for it): who
    holds the most first places, the best speedup and where, the number of ranked solutions. Recomputed from the
    category's ``ProblemStanding`` rows whenever one of them changes, or the catalogue does."""

    category = models.CharField(max_length=64, primary_key=True)
    leader = models.CharField(max_length=300, blank=True)
    leader_firsts = models.PositiveIntegerField(default=0)
    best_speedup = models.FloatField(null=True, blank=True)
    best_problem_id = models.CharField(max_length=200, blank=True)
    solutions = models.PositiveIntegerField(default=0)
    problems = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.category}: {self.leader or 'no leader'}"


class TestRun(EvaluatedSource):
    """One unranked test-mode evaluation (``POST /api/tests/``, ``arena test``): same sandbox and judge as a
    submission, on the profile's fast lane, visible to its owner only.

    A table of its own, not a flag on ``Submission``: rankings, charts, exports and datasets read ``Submission`` and
    ``Result`` only, so a test can never reach them, whatever a future selector forgets to filter.
    """

    class State(models.TextChoices):
        QUEUED = states.QUEUED
        RUNNING = states.RUNNING
        FINISHED = states.FINISHED

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="test_runs")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="test_runs")
    timing = models.BooleanField(default=False, help_text="quick timing asked for (fewer iterations than ranked)")

    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    document = models.JSONField(null=True, blank=True, help_text="the result document, marked as a test")

    def __str__(self) -> str:
        return f"test #{self.pk} {self.problem_id} on {self.profile} ({self.verdict or self.state})"


# What a problem page and the ranking of runs read instead of computing per request, beside the standings.
from leaderboard.stored_models import MeasuredBaseline, MeasuredRoofline, RankingEnds, RunFilterChoice  # noqa: E402, F401
