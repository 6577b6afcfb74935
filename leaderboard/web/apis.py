"""The REST API: one view per operation, each with its own input and output serializers, each calling one
service or selector. Writes authenticate with ``Authorization: Token <key>`` (or the site session)."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.cache import add_never_cache_headers
from django.utils.decorators import method_decorator
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from evaluator.contract.profiles import PROFILES
from leaderboard.catalogue import selectors as catalogue
from leaderboard.model_runs import services as model_runs
from leaderboard.rankings import comparison as comparisons
from leaderboard.rankings import ranking_rows, scores, tables
from leaderboard.rankings import selectors as rankings
from leaderboard.rankings import services as rank_services
from leaderboard.submissions import selectors as submissions
from leaderboard.submissions import services as submission_services
from leaderboard.submissions import publishing, validation
from leaderboard.web.permissions import MayUpload
from leaderboard.web.throttles import ApiAnonThrottle, ApiUserThrottle, UploadThrottle
from leaderboard.web.serializers import (
    AttemptOutputSerializer,
    BestSolutionOutputSerializer,
    ModelRunDetailOutputSerializer,
    ModelRunOutputSerializer,
    ProblemDetailOutputSerializer,
    ProblemOutputSerializer,
    ProtocolOutputSerializer,
    RankingEntryOutputSerializer,
    ScoreBreakdown,
    SubmissionListItemSerializer,
    SubmissionOutputSerializer,
)
from leaderboard.web import cache  # cache.cached_page: the public read API is cached (leaderboard/web/cache.py)


# Creating work is limited per user (form and API alike), on top of the API's own per-user and per-address rates.
UPLOAD_THROTTLES = [ApiAnonThrottle, ApiUserThrottle, UploadThrottle]
RANKING_PAGE_SIZE = 100  # rows of a problem's ranking per API page unless asked otherwise


def exception_handler(exc, context):
    """Service errors (Django ValidationError) become 400s with the same messages the site shows:
    ``{"detail": "<first message>", "errors": {"<field>": ["..."]}}``."""
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            errors = exc.message_dict
        else:
            errors = {"non_field_errors": exc.messages}
        exc = DrfValidationError(detail=errors)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, DrfValidationError) and isinstance(response.data, dict):
        first = next(
            (m for msgs in response.data.values() for m in (msgs if isinstance(msgs, list) else [msgs])),
            "The request is invalid.",
        )
        response.data = {"detail": str(first), "errors": response.data}
    return response


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
        # The stored rows of the default ranking, paged by the database (``rankings.ranking_rows``).
        page = tables.paginate(
            ranking_rows.problem_ranking_rows(problem=problem, profile=profile),
            number=params.validated_data["page"],
            per_page=params.validated_data["page_size"],
        )
        entries = ranking_rows.ranking_entries(page.object_list)
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


# --- submissions ----------------------------------------------------------------------------------------


class SubmissionCreateApi(APIView):
    """Submit one solution file for one problem on one hardware profile.

    Send `multipart/form-data` with a `file` field, or JSON with `source` (and optionally `filename`).
    The answer is the queued submission; follow `api_url` until `state` is `finished`.
    """

    permission_classes = [IsAuthenticated, MayUpload]
    throttle_classes = UPLOAD_THROTTLES
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    class InputSerializer(serializers.Serializer):
        problem = serializers.CharField(help_text="problem id, e.g. collectives/all_reduce")
        profile = serializers.CharField(help_text=f"hardware profile: one of {', '.join(PROFILES)}")
        file = serializers.FileField(required=False, help_text="the solution .py file (multipart)")
        source = serializers.CharField(required=False, trim_whitespace=False, help_text="the solution source (JSON)")
        filename = serializers.CharField(required=False, help_text="a name for pasted source; default solution.py")

        def validate(self, data):
            if "file" in data and "source" in data:
                raise serializers.ValidationError("Send either `file` (multipart) or `source` (JSON), not both.")
            if "file" not in data and "source" not in data:
                raise serializers.ValidationError(
                    "Send the solution as a multipart `file` field or as a JSON `source` string."
                )
            return data

    class ListSerializer(serializers.Serializer):
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=tables.MAX_PER_PAGE, default=tables.DEFAULT_PER_PAGE
        )

    @extend_schema(
        operation_id="submissions_list",
        parameters=[ListSerializer],
        description="Your own submissions (not a model run's attempts), newest first, a page at a time.",
        responses=inline_serializer(
            "SubmissionList",
            {
                "count": serializers.IntegerField(),
                "page": serializers.IntegerField(),
                "num_pages": serializers.IntegerField(),
                "results": SubmissionListItemSerializer(many=True),
            },
        ),
    )
    def get(self, request):
        params = self.ListSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        page = tables.paginate(
            submissions.submission_list(user=request.user),
            number=params.validated_data["page"],
            per_page=params.validated_data["page_size"],
        )
        return Response(
            {
                "count": page.paginator.count,
                "page": page.number,
                "num_pages": page.paginator.num_pages,
                "results": SubmissionListItemSerializer(page.object_list, many=True, context={"request": request}).data,
            }
        )

    @extend_schema(
        operation_id="submissions_create", request=InputSerializer, responses={201: SubmissionOutputSerializer}
    )
    def post(self, request):
        params = self.InputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        if "file" in data:
            upload = data["file"]
            source, filename = validation.upload_read(upload), upload.name
        else:
            source, filename = data["source"], data.get("filename") or "solution.py"
        submission = submission_services.submission_create(
            user=request.user, problem=data["problem"], profile=data["profile"], filename=filename, source=source
        )
        body = SubmissionOutputSerializer(submission, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class SubmissionDetailApi(APIView):
    @extend_schema(operation_id="submissions_retrieve", responses=SubmissionOutputSerializer)
    def get(self, request, submission_id: int):
        submission = submissions.submission_detail(submission_id=submission_id)
        return Response(SubmissionOutputSerializer(submission, context={"request": request}).data)


class SubmissionCancelApi(APIView):
    """Cancel your own submission while it is queued or running (403 for anyone else's; 400 once it finished).
    A queued job leaves the queue; an evaluation already running ends on its worker and its result is dropped."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="submissions_cancel", request=None, responses=SubmissionOutputSerializer)
    def post(self, request, submission_id: int):
        submission_services.submission_cancel(submission_id=submission_id, user=request.user)
        submission = submissions.submission_detail(submission_id=submission_id)
        return Response(SubmissionOutputSerializer(submission, context={"request": request}).data)


class PublishInputSerializer(serializers.Serializer):
    published = serializers.BooleanField(
        default=True, help_text="true: publish (anyone may read and download the code); false: private again"
    )


class SubmissionPublishApi(APIView):
    """Publish (or, with `published: false`, unpublish) your own solution's source: once published anyone can read
    and download it, with its result beside it. 403 for anyone else's; 400 for a model run's attempt (publish the
    run). Publishing changes no score."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="submissions_publish", request=PublishInputSerializer, responses=SubmissionOutputSerializer
    )
    def post(self, request, submission_id: int):
        params = PublishInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        publishing.submission_publish(
            submission_id=submission_id, user=request.user, published=params.validated_data["published"]
        )
        submission = submissions.submission_detail(submission_id=submission_id)
        return Response(SubmissionOutputSerializer(submission, context={"request": request}).data)


# --- model runs -----------------------------------------------------------------------------------------
#
# Every score the API returns carries the protocol it was obtained with: `protocol` (mode, k, turn budget,
# tokens, wall time and a one-line `label`) sits beside `scores` in every run object, and `scores` names
# the k it is computed at (`scored_at_k`).


class ModelRunCreateApi(APIView):
    """Upload a model run: one `.zip` or `.tar.gz` archive as the multipart field `archive`.

    The whole archive is validated before anything is stored; a refusal (400) lists every problem found in
    `errors.archive`, each naming the file and field. The answer is the queued run; follow `api_url` until
    `state` is `finished` (`attempts_done` of `attempts_total` tells the progress).
    """

    permission_classes = [IsAuthenticated, MayUpload]
    throttle_classes = UPLOAD_THROTTLES
    parser_classes = [MultiPartParser]

    @extend_schema_serializer(component_name="ModelRunUpload")
    class InputSerializer(serializers.Serializer):
        archive = serializers.FileField(
            help_text="manifest.json + attempts/<category>/<name>/attempt_<i>.py "
            "(+ optional trajectories/), zipped or tar.gz'd"
        )

    @extend_schema(operation_id="model_runs_create", request=InputSerializer, responses={201: ModelRunOutputSerializer})
    def post(self, request):
        params = self.InputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        upload = params.validated_data["archive"]
        run = model_runs.model_run_create(
            user=request.user, filename=upload.name, data=model_runs.archive_upload_read(upload)
        )
        body = ModelRunOutputSerializer(run, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class ModelRunPublishApi(APIView):
    """Publish (or, with `published: false`, unpublish) every attempt and trajectory of your own model run.
    403 for anyone else's run."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="model_runs_publish", request=PublishInputSerializer, responses=ModelRunOutputSerializer
    )
    def post(self, request, run_id: int):
        params = PublishInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        publishing.model_run_publish(run_id=run_id, user=request.user, published=params.validated_data["published"])
        run = rankings.model_run_detail(run_id=run_id)
        return Response(ModelRunOutputSerializer(run, context={"request": request}).data)


@method_decorator(cache.cached_page(scopes=cache.run_page_scopes), name="dispatch")
class ModelRunDetailApi(APIView):
    """A model run: its progress (`attempts_done` of `attempts_total`; `state` is `finished` when every
    attempt is), its protocol, its stored scores and a per-problem and per-category breakdown."""

    @extend_schema(operation_id="model_runs_retrieve", responses=ModelRunDetailOutputSerializer)
    def get(self, request, run_id: int):
        run = rankings.model_run_detail(run_id=run_id)
        return Response(ModelRunDetailOutputSerializer(run, context={"request": request}).data)


@method_decorator(cache.cached_page(scopes=cache.run_page_scopes), name="dispatch")
class ModelRunAttemptsApi(APIView):
    @extend_schema(
        operation_id="model_runs_attempts",
        responses=inline_serializer(
            "ModelRunAttempts",
            {
                "model_run": serializers.IntegerField(),
                "protocol": ProtocolOutputSerializer(),
                "attempts": AttemptOutputSerializer(many=True),
            },
        ),
    )
    def get(self, request, run_id: int):
        run = rankings.model_run_detail(run_id=run_id)
        attempts = rankings.model_run_attempts(run=run)
        return Response(
            {
                "model_run": run.pk,
                "protocol": scores.protocol(run),
                "attempts": AttemptOutputSerializer(
                    attempts, many=True, context={"request": request, "profile": run.profile}
                ).data,
            }
        )


@method_decorator(cache.cached_page(scopes=cache.ranking_scopes), name="dispatch")
class ModelRunRankingApi(APIView):
    """The overall ranking of model runs (the same rows, order and filters as /runs/)."""

    class InputSerializer(serializers.Serializer):
        """Besides the ranking's filters (profile, precision, mode, k: rankings.filters.RunFilterSet)."""

        user = serializers.CharField(required=False)
        sort = serializers.ChoiceField(
            choices=tables.run_ranking_table().sort_keys(), required=False, default=tables.RUN_DEFAULT_SORT
        )
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=tables.MAX_PER_PAGE, default=tables.DEFAULT_PER_PAGE
        )
        standing = serializers.ChoiceField(
            choices=[rankings.RANKED, rankings.UNRANKED, rankings.ALL],
            required=False,
            default=rankings.RANKED,
            help_text="ranked (default: finished runs covering their current suite version, with rank ranges), "
            "unranked (unfinished, partial or of another version: listed apart, never ranked) or all",
        )

    @extend_schema(
        operation_id="rankings_model_runs",
        parameters=[
            InputSerializer,
            OpenApiParameter("profile", str, description="hardware profile (one some run has)"),
            OpenApiParameter("precision", str, description="precision (one some run has)"),
            OpenApiParameter("mode", str, enum=["zero-shot", "agentic"], description="the protocol's mode"),
            OpenApiParameter("k", int, description="attempts per problem (a k some run has)"),
        ],
        responses=inline_serializer(
            "ModelRunRanking",
            {
                "count": serializers.IntegerField(),
                "page": serializers.IntegerField(),
                "num_pages": serializers.IntegerField(),
                "results": ModelRunOutputSerializer(many=True),
            },
        ),
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        filters = rankings.model_run_filters(request.query_params)
        if not filters.is_valid():
            raise DrfValidationError(
                {name: [e["message"] for e in errors] for name, errors in filters.errors.get_json_data().items()}
            )
        user = rankings.user_by_username(username=data["user"]) if data.get("user") else None
        runs = rankings.model_run_ranking(filters=filters, user=user, sort=data["sort"], standing=data["standing"])
        page = tables.paginate(runs, number=data["page"], per_page=data["page_size"])
        ranges = (
            rankings.model_run_rank_ranges(runs=runs, sort=data["sort"]) if data["standing"] == rankings.RANKED else {}
        )
        rows = list(page.object_list)
        for run in rows:
            run.rank_range = ranges.get(run.pk)
        return Response(
            {
                "count": page.paginator.count,
                "page": page.number,
                "num_pages": page.paginator.num_pages,
                "standing": data["standing"],
                "rank_metric": rankings.rank_metric(data["sort"]),
                "results": ModelRunOutputSerializer(rows, many=True, context={"request": request}).data,
            }
        )


COMPUTING_RETRY_S = 2  # a comparison being computed: ask again after this


@method_decorator(cache.cached_page(scopes=cache.comparison_scopes), name="dispatch")
class ModelRunCompareApi(APIView):
    """Two runs side by side, both scored at the smaller of their ks, as the comparison job computed them; 202 with
    Retry-After while it computes them for the runs' current scores."""

    class InputSerializer(serializers.Serializer):
        a = serializers.IntegerField()
        b = serializers.IntegerField()

    @extend_schema(
        operation_id="rankings_compare",
        parameters=[InputSerializer],
        responses=inline_serializer(
            "ModelRunComparison",
            {
                "scored_at_k": serializers.IntegerField(),
                "a": ModelRunOutputSerializer(),
                "b": ModelRunOutputSerializer(),
                "a_breakdown": ScoreBreakdown,
                "b_breakdown": ScoreBreakdown,
            },
        ),
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        a = rankings.model_run_detail(run_id=params.validated_data["a"])
        b = rankings.model_run_detail(run_id=params.validated_data["b"])
        comparison = comparisons.model_run_comparison(a=a, b=b)  # as the comparison job stored it
        if comparison is None:  # not computed for these scores yet: asked of the web worker, never computed here
            rank_services.run_comparison_request(a=a, b=b)
            response = Response(
                {"status": "computing", "retry_after_s": COMPUTING_RETRY_S},
                status=202,
                headers={"Retry-After": str(COMPUTING_RETRY_S)},
            )
            add_never_cache_headers(response)
            return response
        context = {"request": request}
        return Response(
            {
                "scored_at_k": comparison.k,
                "a": ModelRunOutputSerializer(comparison.a, context=context).data,
                "b": ModelRunOutputSerializer(comparison.b, context=context).data,
                "a_breakdown": scores.run_score(comparison.a_score),
                "b_breakdown": scores.run_score(comparison.b_score),
                "differences": [scores.difference(d) for d in comparison.differences],
                "significant": comparison.any_significant,
                "summary": "significant difference" if comparison.any_significant else "no significant difference",
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


@method_decorator(cache.cached_page(scopes=cache.user_page_scopes), name="dispatch")
class UserDetailApi(APIView):
    @extend_schema(
        operation_id="users_retrieve",
        responses=inline_serializer(
            "UserDetail",
            {
                "username": serializers.CharField(),
                "model_runs": ModelRunOutputSerializer(many=True),
                "best_solutions": BestSolutionOutputSerializer(many=True),
            },
        ),
    )
    def get(self, request, username: str):
        person = rankings.user_by_username(username=username)
        runs = rankings.model_run_ranking(user=person)
        return Response(
            {
                "username": person.get_username(),
                "model_runs": ModelRunOutputSerializer(runs, many=True, context={"request": request}).data,
                "best_solutions": BestSolutionOutputSerializer(
                    rankings.user_best_solutions(user=person), many=True
                ).data,
            }
        )
