"""The API's output serializers: how problems, submissions, runs, scores and rankings are written as JSON (the scores
themselves by ``rankings.scores``). Every score a run object carries sits beside its protocol."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from leaderboard.models import Problem, Submission
from leaderboard.rankings import metrics, problem_tables, scores
from leaderboard.submissions import selectors as submissions


class ProblemOutputSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    supported_profiles = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = Problem
        fields = [
            "id",
            "title",
            "category",
            "summary",
            "version",
            "content_hash",
            "world_sizes",
            "supported_profiles",
            "codebase",
            "function",
            "hard",
            "communication",
            "tags",
            "url",
        ]

    tags = serializers.ListField(source="tag_list", child=serializers.CharField(), read_only=True)

    def get_url(self, obj: Problem) -> str:
        return reverse("problem-detail", kwargs={"problem_id": obj.id})


class ProblemDetailOutputSerializer(ProblemOutputSerializer):
    class Meta(ProblemOutputSerializer.Meta):
        fields = ProblemOutputSerializer.Meta.fields + [
            "statement",
            "reference_source",
            "presets",
            "tolerances",
            "roofline",
            "is_active",
        ]


SPEEDUP_NOTE_HELP = (
    "why speedup and roofline_fraction are null: set on a CPU profile, whose timings only check "
    "the pipeline; null where they are measurements"
)


class VerificationOutputSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="verified (intervals overlap), flagged (they do not), pending or failed")
    submission_id = serializers.IntegerField(help_text="the re-measurement")
    speedup = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    other_host = serializers.BooleanField(allow_null=True)


class RankingEntryOutputSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    rank_best = serializers.IntegerField(allow_null=True, help_text="1 + rows significantly faster")
    rank_worst = serializers.IntegerField(allow_null=True)
    evaluations = serializers.IntegerField(help_text="evaluations of this code pooled into the figure")
    estimator = serializers.CharField(help_text="how the speedup was formed")
    protocol_revision = serializers.IntegerField(allow_null=True)
    problem_version = serializers.IntegerField(allow_null=True)
    timed = serializers.BooleanField(help_text="false on a CPU profile: the timings are pipeline checks, no speedup")
    verification = VerificationOutputSerializer(allow_null=True)
    username = serializers.CharField()
    submission_id = serializers.IntegerField()
    model_run_id = serializers.IntegerField(allow_null=True, help_text="set when the solution is a model run's attempt")
    model = serializers.CharField(help_text="the model run's model, or empty for a solo submission")
    protocol = serializers.CharField(help_text="the model run's protocol label, or empty")
    speedup = serializers.FloatField(allow_null=True)
    speedup_ci_low = serializers.FloatField(allow_null=True)
    speedup_ci_high = serializers.FloatField(allow_null=True)
    baseline_median_us = serializers.FloatField(allow_null=True)
    solution_median_us = serializers.FloatField(allow_null=True)
    roofline_fraction = serializers.FloatField(allow_null=True)
    submitted_at = serializers.DateTimeField()
    speedup_note = serializers.SerializerMethodField(help_text=SPEEDUP_NOTE_HELP)

    def get_speedup_note(self, obj) -> str | None:
        return None if obj.timed else problem_tables.NOT_TIMED_NOTE


class SubmissionListItemSerializer(serializers.ModelSerializer):
    """One of one's own submissions in ``GET /api/submissions/``: its state and verdict, without the source or the
    result document (follow ``api_url`` for those)."""

    problem = serializers.CharField(source="problem_id")
    url = serializers.SerializerMethodField(help_text="the status page")
    api_url = serializers.SerializerMethodField()
    speedup = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "problem",
            "profile",
            "problem_version",
            "filename",
            "state",
            "verdict",
            "speedup",
            "speedup_note",
            "created_at",
            "finished_at",
            "url",
            "api_url",
        ]

    def get_url(self, obj: Submission) -> str:
        return self._absolute(reverse("submission-detail", kwargs={"submission_id": obj.pk}))

    def get_api_url(self, obj: Submission) -> str:
        return self._absolute(reverse("api-submission-detail", kwargs={"submission_id": obj.pk}))

    speedup_note = serializers.SerializerMethodField(help_text=SPEEDUP_NOTE_HELP)

    def get_speedup(self, obj: Submission) -> float | None:
        result = getattr(obj, "result", None)
        return metrics.speed_or_none(obj.profile, result.speedup) if result else None

    def get_speedup_note(self, obj: Submission) -> str | None:
        return metrics.speed_note(obj.profile)

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class SubmissionOutputSerializer(serializers.ModelSerializer):
    problem = serializers.CharField(source="problem_id")
    url = serializers.SerializerMethodField(help_text="the status page")
    api_url = serializers.SerializerMethodField()
    message = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField(
        help_text="the evaluator's result document once finished (rank logs and traceback only for its author)"
    )
    source = serializers.SerializerMethodField(help_text="only shown to its author")
    sha256 = serializers.SerializerMethodField(
        help_text="the source's sha256; its first 12 hex digits for anyone but its author while the source is private"
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "problem",
            "profile",
            "problem_version",
            "problem_hash",
            "filename",
            "sha256",
            "state",
            "verdict",
            "message",
            "created_at",
            "started_at",
            "finished_at",
            "worker",
            "url",
            "api_url",
            "result",
            "source",
            "published_at",
        ]
        extra_kwargs = {
            "published_at": {
                "help_text": "when its owner published its source (null: private); a model "
                "run's attempt is published with its run"
            }
        }

    def get_url(self, obj: Submission) -> str:
        return self._absolute(reverse("submission-detail", kwargs={"submission_id": obj.pk}))

    def get_api_url(self, obj: Submission) -> str:
        return self._absolute(reverse("api-submission-detail", kwargs={"submission_id": obj.pk}))

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def _viewer(self):
        request = self.context.get("request")
        return request.user if request else AnonymousUser()

    def get_message(self, obj: Submission) -> str:
        document = submissions.submission_result_document(submission=obj, user=self._viewer())
        return document.get("message", "") if isinstance(document, dict) else ""

    def get_result(self, obj: Submission) -> dict | None:
        return submissions.submission_result_document(submission=obj, user=self._viewer())

    def get_sha256(self, obj: Submission) -> str:
        return submissions.submission_sha256_shown(submission=obj, user=self._viewer())

    def get_source(self, obj: Submission) -> str | None:
        request = self.context.get("request")
        if request and submissions.submission_source_visible(submission=obj, user=request.user):
            return obj.source
        return None


class ProtocolOutputSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=["zero-shot", "agentic"])
    k = serializers.IntegerField(help_text="attempts per problem")
    turn_budget = serializers.IntegerField(help_text="agent turns per attempt; 0 for zero-shot")
    tokens = serializers.IntegerField(help_text="tokens the whole run spent")
    wall_time_s = serializers.FloatField(help_text="wall time the whole run spent")
    label = serializers.CharField(help_text="the one-line form every page shows beside the scores")


class RunScoresOutputSerializer(serializers.Serializer):
    scored_at_k = serializers.IntegerField(allow_null=True)
    protocol = serializers.CharField(help_text="the protocol's label, repeated so a score never travels without it")
    pass_at_k = serializers.FloatField(allow_null=True, help_text="mean unbiased pass@k over scorable problems")
    pass_at_1 = serializers.FloatField(allow_null=True, help_text="pass@1 estimated from the same attempts")
    fast_p_at_k = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text='fast_p@k keyed by p: "1", "1.5", "2"'
    )
    geomean_speedup = serializers.FloatField(allow_null=True)
    mean_roofline_fraction = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    problems_scored = serializers.IntegerField()
    problems_not_scorable = serializers.IntegerField()
    problems_not_attempted = serializers.IntegerField()
    correct_attempts = serializers.IntegerField()
    intervals = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="95 % bootstrap intervals over problems: pass_at_k, fast_1, fast_1_5, fast_2, geomean -> [low, high]",
    )
    status = serializers.CharField()
    timed = serializers.BooleanField(help_text="false on a CPU profile: verdicts only, no speed figures")
    protocol_revision = serializers.IntegerField(allow_null=True)


class ModelRunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    model = serializers.CharField()
    provider = serializers.CharField()
    user = serializers.CharField(source="user.username")
    profile = serializers.CharField(help_text="hardware profile the attempts run on")
    precision = serializers.CharField()
    suite = serializers.CharField()
    run_date = serializers.DateField(allow_null=True)
    open_weights = serializers.BooleanField(allow_null=True)
    is_demo = serializers.BooleanField()
    state = serializers.CharField(help_text="queued, running or finished (every attempt evaluated or cancelled)")
    attempts_done = serializers.IntegerField()
    attempts_total = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    published_at = serializers.DateTimeField(
        allow_null=True, help_text="when its owner published its attempts and trajectories (null: private)"
    )
    url = serializers.SerializerMethodField(help_text="the run's page")
    api_url = serializers.SerializerMethodField()
    protocol = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()
    suite_version = serializers.CharField()
    standing = serializers.SerializerMethodField(
        help_text="ranked, unfinished (attempts without a final verdict), partial (misses problems of its suite "
        "version) or other-version; only ranked runs get a rank"
    )
    rank = serializers.SerializerMethodField(
        help_text="[best, worst] rank range in this ranking (1 + runs "
        "significantly better .. N - runs significantly worse); null "
        "when not ranked"
    )

    def get_standing(self, obj) -> str:
        return getattr(getattr(obj, "score", None), "status", None) or "unfinished"

    def get_rank(self, obj) -> list[int] | None:
        span = getattr(obj, "rank_range", None)
        return list(span) if span else None

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_url(self, obj) -> str:
        return self._absolute(reverse("model-run-detail", kwargs={"run_id": obj.pk}))

    def get_api_url(self, obj) -> str:
        return self._absolute(reverse("api-model-run-detail", kwargs={"run_id": obj.pk}))

    @extend_schema_field(ProtocolOutputSerializer)
    def get_protocol(self, obj) -> dict:
        return scores.protocol(obj)

    @extend_schema_field(RunScoresOutputSerializer)
    def get_scores(self, obj) -> dict:
        return scores.stored(obj)


class ProblemScoreOutputSerializer(serializers.Serializer):
    problem = serializers.CharField()
    category = serializers.CharField()
    n = serializers.IntegerField(help_text="attempts counted (infra errors and unfinished ones are left out)")
    c = serializers.IntegerField(help_text="correct attempts")
    scorable = serializers.BooleanField(help_text="n >= k")
    pass_at_k = serializers.FloatField(allow_null=True)
    fast_p_at_k = serializers.DictField(child=serializers.FloatField(allow_null=True))
    best_speedup = serializers.FloatField(allow_null=True)
    geomean_speedup = serializers.FloatField(allow_null=True)
    mean_roofline_fraction = serializers.FloatField(allow_null=True)


class AggregateOutputSerializer(serializers.Serializer):
    problems = serializers.IntegerField(help_text="scorable problems the means are over")
    pass_at_k = serializers.FloatField(allow_null=True)
    fast_p_at_k = serializers.DictField(child=serializers.FloatField(allow_null=True))
    geomean_speedup = serializers.FloatField(allow_null=True)
    mean_roofline_fraction = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    not_scorable = serializers.ListField(child=serializers.CharField())
    not_attempted = serializers.ListField(child=serializers.CharField())


ScoreBreakdown = inline_serializer(
    "ScoreBreakdown",
    {
        "scored_at_k": serializers.IntegerField(),
        "protocol": serializers.CharField(),
        "overall": AggregateOutputSerializer(),
        "by_category": serializers.DictField(child=AggregateOutputSerializer()),
        "problems": ProblemScoreOutputSerializer(many=True),
    },
)


class ModelRunDetailOutputSerializer(ModelRunOutputSerializer):
    manifest = serializers.DictField(help_text="the manifest as uploaded (validated)")
    breakdown = serializers.SerializerMethodField(
        help_text="scores per problem and per category, as stored when the run's results were recorded"
    )

    @extend_schema_field(ScoreBreakdown)
    def get_breakdown(self, obj) -> dict:
        # as stored at ingest; a row that holds no whole score yet gives an empty one (a request never scores a run)
        return scores.run_score(scores.stored_score(obj) or scores.unscored(obj))


class AttemptOutputSerializer(serializers.Serializer):
    submission_id = serializers.IntegerField()
    problem = serializers.CharField(source="problem_id")
    category = serializers.CharField()
    attempt = serializers.IntegerField()
    state = serializers.CharField()
    verdict = serializers.CharField(allow_null=True)
    speedup = serializers.SerializerMethodField()
    roofline_fraction = serializers.SerializerMethodField()
    speedup_note = serializers.SerializerMethodField(help_text=SPEEDUP_NOTE_HELP)
    solution_median_us = serializers.FloatField(allow_null=True)
    baseline_median_us = serializers.FloatField(allow_null=True)
    result_url = serializers.SerializerMethodField(help_text="the submission, with its whole result document")

    def _profile(self) -> str:
        return self.context.get("profile", "")

    def get_speedup(self, obj) -> float | None:
        return metrics.speed_or_none(self._profile(), obj.speedup) if self._profile() else obj.speedup

    def get_roofline_fraction(self, obj) -> float | None:
        return (
            metrics.speed_or_none(self._profile(), obj.roofline_fraction) if self._profile() else obj.roofline_fraction
        )

    def get_speedup_note(self, obj) -> str | None:
        return metrics.speed_note(self._profile()) if self._profile() else None

    def get_result_url(self, obj) -> str:
        path = reverse("api-submission-detail", kwargs={"submission_id": obj.submission_id})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class BestSolutionOutputSerializer(serializers.Serializer):
    problem = serializers.CharField(source="problem_id")
    profile = serializers.CharField()
    submission_id = serializers.IntegerField()
    speedup = serializers.SerializerMethodField()
    roofline_fraction = serializers.SerializerMethodField()
    speedup_note = serializers.SerializerMethodField(help_text=SPEEDUP_NOTE_HELP)
    submitted_at = serializers.DateTimeField()

    def get_speedup(self, obj) -> float | None:
        return metrics.speed_or_none(obj.profile, obj.speedup)

    def get_roofline_fraction(self, obj) -> float | None:
        return metrics.speed_or_none(obj.profile, obj.roofline_fraction)

    def get_speedup_note(self, obj) -> str | None:
        return metrics.speed_note(obj.profile)


class PublishInputSerializer(serializers.Serializer):
    """What publishing a solution or a model run takes (the API's two publish operations)."""

    published = serializers.BooleanField(
        default=True, help_text="true: publish (anyone may read and download the code); false: private again"
    )
