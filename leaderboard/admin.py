from django.contrib import admin

from leaderboard.rankings.generations import rankings_changed
from leaderboard.models import ModelRun, Problem, Result, RunScore, Submission, Trajectory


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
    readonly_fields = ["verdict", "speedup", "speedup_ci_low", "speedup_ci_high", "baseline_median_us",
                       "solution_median_us", "roofline_fraction", "problem_version", "problem_hash", "recorded_at",
                       "document"]


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
    list_display = ["id", "model", "provider", "mode", "k", "profile", "precision", "user", "state", "attempts_done",
                    "attempts_total", "is_demo", "created_at"]
    list_filter = ["state", "mode", "k", "profile", "precision", "is_demo"]
    search_fields = ["id", "model", "provider", "user__username", "archive_sha256"]
    raw_id_fields = ["user"]
    readonly_fields = ["archive_sha256", "manifest", "attempts_done", "attempts_total", "created_at", "finished_at"]
    inlines = [RunScoreInline]


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ["id", "submission", "filename", "format", "size"]
    raw_id_fields = ["submission"]
