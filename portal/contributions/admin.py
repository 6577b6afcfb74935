from django.contrib import admin

from portal.contributions.models import ProblemProposal


@admin.register(ProblemProposal)
class ProblemProposalAdmin(admin.ModelAdmin):
    """Read and fix rows by hand; reviews go through the review page (/contribute/review/), which uses the services."""

    list_display = ["id", "category", "name", "title", "author", "state", "created_at", "reviewed_at"]
    list_filter = ["state", "category"]
    search_fields = ["name", "title", "author__username"]
    raw_id_fields = ["author", "moderator"]
    readonly_fields = ["content_hash", "check_report", "check_job_id", "check_count", "created_at", "updated_at"]
