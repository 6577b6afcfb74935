"""The REST API's problems: the catalogue, one problem, its ranking and its results. One view per operation, each
calling one selector."""

from __future__ import annotations

from django.utils.decorators import method_decorator
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluator.contract.profiles import PROFILES
from leaderboard.catalogue import selectors as catalogue
from leaderboard.rankings import ranking_rows, tables
from leaderboard.rankings import selectors as rankings
from leaderboard.web import cache  # cache.cached_page: the public read API is cached (leaderboard/web/cache.py)
from leaderboard.web.serializers import (
    ProblemDetailOutputSerializer,
    ProblemOutputSerializer,
    RankingEntryOutputSerializer,
)

RANKING_PAGE_SIZE = 100  # rows of a problem's ranking per API page unless asked otherwise


# --- problems -------------------------------------------------------------------------------------------


@method_decorator(cache.cached_page, name="dispatch")
class ProblemListApi(APIView):
    @extend_schema(
        operation_id="problems_list",
        responses=ProblemOutputSerializer(many=True),
        parameters=[
            OpenApiParameter("q", str, description="words to find in the id, title, summary, why it is hard, tags"),
            OpenApiParameter("category", str, description="only this category"),
            OpenApiParameter("world_size", int, description="only problems that run on this many ranks"),
            OpenApiParameter("tag", str, description="only problems with this tag, e.g. inter-node"),
        ],
    )
    def get(self, request):
        """The active problems, searched and filtered like the home page (`catalogue.filters`)."""
        filters = catalogue.problem_filters(request.query_params)
        if not filters.is_valid():
            raise DrfValidationError(filters.errors)
        return Response(ProblemOutputSerializer(filters.qs, many=True).data)


@method_decorator(cache.cached_page, name="dispatch")
class ProblemDetailApi(APIView):
    @extend_schema(operation_id="problems_retrieve", responses=ProblemDetailOutputSerializer)
    def get(self, request, problem_id: str):
        problem = catalogue.problem_detail(problem_id=problem_id)
        return Response(ProblemDetailOutputSerializer(problem).data)


@method_decorator(cache.cached_page(scopes=cache.problem_page_scopes), name="dispatch")
class ProblemRankingApi(APIView):
    class InputSerializer(serializers.Serializer):
        profile = serializers.CharField(required=False, help_text="hardware profile; default: the site's default")
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=tables.MAX_PER_PAGE, default=RANKING_PAGE_SIZE
        )

    @extend_schema(
        operation_id="problems_ranking",
        parameters=[
            OpenApiParameter(
                "profile", str, enum=list(PROFILES), description="hardware profile; default: the site's default profile"
            ),
            OpenApiParameter("page", int, description="1-based page of the ranking (default 1)"),
            OpenApiParameter(
                "page_size",
                int,
                description=f"rows per page, at most {tables.MAX_PER_PAGE} (default {RANKING_PAGE_SIZE})",
            ),
        ],
        responses=inline_serializer(
            "Ranking",
            {
                "problem": serializers.CharField(),
                "problem_version": serializers.IntegerField(),
                "profile": serializers.CharField(),
                "count": serializers.IntegerField(),
                "page": serializers.IntegerField(),
                "num_pages": serializers.IntegerField(),
                "entries": RankingEntryOutputSerializer(many=True),
            },
        ),
    )
    def get(self, request, problem_id: str):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        problem = catalogue.problem_detail(problem_id=problem_id)
        requested = params.validated_data.get("profile")
        if requested and not problem.supports(requested):
            raise DrfValidationError(
                {
                    "profile": [
                        f"{problem.id} has no ranking on {requested!r}; choose one of "
                        f"{', '.join(problem.supported_profiles)}."
                    ]
                }
            )
        profile = catalogue.problem_default_profile(problem=problem, preferred=requested)
        # The stored rows of the default ranking, paged by the database, counted by their standing
        # (``rankings.ranking_rows``).
        rows, count, key = ranking_rows.problem_default_ranking_rows(problem=problem, profile=profile)
        page = tables.paginate(
            rows, number=params.validated_data["page"], per_page=params.validated_data["page_size"], count=count
        )
        # (in rank order: the page's query compiled once per process for each page of each ranking)
        entries = ranking_rows.ranking_entries(page.object_list, key=key and (*key, "rank"))
        return Response(
            {
                "problem": problem.id,
                "problem_version": problem.version,
                "profile": profile,
                "count": page.paginator.count,
                "page": page.number,
                "num_pages": page.paginator.num_pages,
                "entries": RankingEntryOutputSerializer(entries, many=True).data,
            }
        )


@method_decorator(cache.cached_page(scopes=cache.problem_page_scopes), name="dispatch")
class ProblemResultsApi(APIView):
    """A problem's figures on one profile: the baseline's time, the roofline and every passed speedup."""

    class InputSerializer(serializers.Serializer):
        profile = serializers.CharField(required=False)

    @extend_schema(
        operation_id="problems_results",
        parameters=[InputSerializer],
        responses=inline_serializer(
            "ProblemResults",
            {
                "problem": serializers.CharField(),
                "problem_version": serializers.IntegerField(),
                "profile": serializers.CharField(),
                "baseline_median_us": serializers.FloatField(allow_null=True),
                "baseline_evaluations": serializers.IntegerField(),
                "roofline_us": serializers.FloatField(allow_null=True),
                "roofline_bound": serializers.CharField(allow_null=True),
                "speedups": serializers.ListField(child=serializers.FloatField()),
            },
        ),
    )
    def get(self, request, problem_id: str):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        problem = catalogue.problem_detail(problem_id=problem_id)
        profile = catalogue.problem_default_profile(problem=problem, preferred=params.validated_data.get("profile"))
        baseline = rankings.problem_baseline(problem=problem, profile=profile) if profile else None
        return Response(
            {
                "problem": problem.id,
                "problem_version": problem.version,
                "profile": profile,
                "baseline_median_us": baseline.median_us if baseline else None,
                "baseline_evaluations": baseline.evaluations if baseline else 0,
                "roofline_us": baseline.roofline_us if baseline else None,
                "roofline_bound": baseline.roofline_bound if baseline else None,
                "speedups": rankings.problem_speedups(problem=problem, profile=profile) if profile else [],
            }
        )
