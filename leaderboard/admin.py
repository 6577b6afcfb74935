from django.contrib import admin

from leaderboard.rankings.generations import rankings_changed
from leaderboard.rankings.scores import stored_protocol_label
from leaderboard.models import (
    CategoryStanding,
    MeasuredBaseline,
    MeasuredRoofline,
    ModelRun,
    Problem,
    ProblemStanding,
    Result,
    RunComparison,
    RankingEnds,
    RunFilterChoice,
    RunScore,
    StandingEntry,
    Submission,
    TestRun,
    Trajectory,
)


class ChangesRankings(admin.ModelAdmin):
    """An edit in the admin is a write like any other: the cached ranking pages must not outlive it."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        rankings_changed()

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        rankings_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        rankings_changed()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        rankings_changed()


@admin.register(Problem)
class ProblemAdmin(ChangesRankings):
    list_display = ["id", "title", "category", "version", "is_active", "updated_at"]
    list_filter = ["category", "is_active", "suite"]
    search_fields = ["id", "title", "codebase", "function"]
    readonly_fields = ["content_hash", "created_at", "updated_at"]


class ResultInline(admin.StackedInline):
    model = Result
    extra = 0
    can_delete = False
    readonly_fields = [
        "verdict",
        "speedup",
        "speedup_ci_low",
        "speedup_ci_high",
        "baseline_median_us",
        "solution_median_us",
        "roofline_fraction",
        "problem_version",
        "problem_hash",
        "recorded_at",
        "document",
    ]


@admin.register(Submission)
class SubmissionAdmin(ChangesRankings):
    list_display = ["id", "user", "problem", "profile", "state", "verdict", "worker", "created_at", "finished_at"]
    list_filter = ["state", "verdict", "profile", "problem"]
    search_fields = ["id", "user__username", "sha256", "job_id", "worker"]
    raw_id_fields = ["user"]
    readonly_fields = ["sha256", "created_at", "enqueued_at", "started_at", "heartbeat_at", "finished_at"]
    inlines = [ResultInline]


@admin.register(Result)
class ResultAdmin(ChangesRankings):
    list_display = ["submission", "verdict", "speedup", "roofline_fraction", "problem_version", "recorded_at"]
    list_filter = ["verdict", "problem_version"]
    raw_id_fields = ["submission"]


class RunScoreInline(admin.StackedInline):
    model = RunScore
    extra = 0
    can_delete = False
    readonly_fields = [f.name for f in RunScore._meta.fields if f.name != "model_run"]


@admin.register(ModelRun)
class ModelRunAdmin(ChangesRankings):
    list_display = [
        "id",
        "model",
        "provider",
        "mode",
        "k",
        "profile",
        "precision",
        "user",
        "state",
        "attempts_done",
        "attempts_total",
        "is_demo",
        "created_at",
    ]
    list_filter = ["state", "mode", "k", "profile", "precision", "is_demo"]
    search_fields = ["id", "model", "provider", "user__username", "archive_sha256"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "archive_sha256",
        "manifest",
        "protocol_label",
        "attempts_done",
        "attempts_total",
        "created_at",
        "finished_at",
    ]
    inlines = [RunScoreInline]

    def save_model(self, request, obj, form, change):
        obj.protocol_label = stored_protocol_label(obj)  # the one line every table shows follows an edited protocol
        super().save_model(request, obj, form, change)


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ["id", "submission", "filename", "format", "size"]
    raw_id_fields = ["submission"]


class DerivedReadOnly(admin.ModelAdmin):
    """Rows the site derives from others (standings, stored comparisons) or that record what happened (test runs):
    shown for operators to inspect; edited only by the services that own them, so the admin cannot make them lie."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(RunComparison)
class RunComparisonAdmin(DerivedReadOnly):
    list_display = ["id", "a", "b", "a_scored_at", "b_scored_at", "computed_at"]
    raw_id_fields = ["a", "b"]


@admin.register(ProblemStanding)
class ProblemStandingAdmin(DerivedReadOnly):
    list_display = [
        "id",
        "problem",
        "profile",
        "problem_version",
        "protocol_revision",
        "solutions",
        "leader_username",
        "leader_model",
        "best_speedup",
        "updated_at",
    ]
    list_filter = ["profile"]
    search_fields = ["problem__id"]


@admin.register(StandingEntry)
class StandingEntryAdmin(DerivedReadOnly):
    list_display = ["id", "standing", "rank", "who_key", "speedup", "evaluations", "submission_id"]
    raw_id_fields = ["standing"]
    search_fields = ["standing__problem__id", "username", "model"]


@admin.register(CategoryStanding)
class CategoryStandingAdmin(DerivedReadOnly):
    list_display = ["category", "leader", "leader_firsts", "best_speedup", "solutions", "problems", "updated_at"]


@admin.register(MeasuredRoofline)
class MeasuredRooflineAdmin(DerivedReadOnly):
    list_display = ["id", "problem", "profile", "problem_version", "time_us", "bound", "recorded_at", "submission_id"]
    search_fields = ["problem__id", "profile"]


@admin.register(MeasuredBaseline)
class MeasuredBaselineAdmin(DerivedReadOnly):
    list_display = ["id", "problem", "profile", "problem_version", "evaluations", "median_us"]
    search_fields = ["problem__id", "profile"]


@admin.register(RunFilterChoice)
class RunFilterChoiceAdmin(DerivedReadOnly):
    list_display = ["id", "profile", "precision", "k"]


@admin.register(RankingEnds)
class RankingEndsAdmin(DerivedReadOnly):
    list_display = ["id", "filters", "runs", "ranked"]
    search_fields = ["filters"]


@admin.register(TestRun)
class TestRunAdmin(DerivedReadOnly):
    list_display = ["id", "user", "problem", "profile", "state", "verdict", "created_at"]
    list_filter = ["state", "verdict", "profile"]
    search_fields = ["id", "user__username", "problem__id"]
    raw_id_fields = ["user"]


@admin.register(RunScore)
class RunScoreAdmin(DerivedReadOnly):
    """Also inline on its run; listed on its own so operators can sort runs by their stored figures."""

    list_display = ["model_run", "status", "pass_at_k", "pass_at_1", "geomean_speedup", "coverage"]
    list_filter = ["status"]
    raw_id_fields = ["model_run"]
