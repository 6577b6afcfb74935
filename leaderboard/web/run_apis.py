"""The REST API's model runs: upload one, publish it, read it and its attempts, the ranking of every run, the comparison
of two. One view per operation, each calling one service or selector. Writes authenticate with ``Authorization: Token
<key>`` (or the site session)."""

from __future__ import annotations

from django.utils.cache import add_never_cache_headers
from django.utils.decorators import method_decorator
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.model_runs import services as model_runs
from leaderboard.rankings import comparison as comparisons
from leaderboard.rankings import run_rows, run_selectors, run_tables, scores, tables
from leaderboard.rankings import selectors as rankings
from leaderboard.rankings import services as rank_services
from leaderboard.submissions import publishing
from leaderboard.web import cache  # cache.cached_page: the public read API is cached (leaderboard/web/cache.py)
from leaderboard.web.permissions import MayUpload
from leaderboard.web.run_output import KeptJSONRenderer, RunOutput
from leaderboard.web.serializers import (
    AttemptOutputSerializer,
    ModelRunDetailOutputSerializer,
    ModelRunOutputSerializer,
    ProtocolOutputSerializer,
    PublishInputSerializer,
    ScoreBreakdown,
)
from leaderboard.web.throttles import UPLOAD_THROTTLES

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
        run = run_selectors.model_run_detail(run_id=run_id)
        return Response(ModelRunOutputSerializer(run, context={"request": request}).data)


@method_decorator(cache.cached_page(scopes=cache.run_page_scopes), name="dispatch")
class ModelRunDetailApi(APIView):
    """A model run: its progress (`attempts_done` of `attempts_total`; `state` is `finished` when every
    attempt is), its protocol, its stored scores and a per-problem and per-category breakdown."""

    @extend_schema(operation_id="model_runs_retrieve", responses=ModelRunDetailOutputSerializer)
    def get(self, request, run_id: int):
        run = run_selectors.model_run_detail(run_id=run_id)
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
        run = run_selectors.model_run_detail(run_id=run_id)
        attempts = run_selectors.model_run_attempts(run=run)
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

    renderer_classes = [KeptJSONRenderer]  # (DRF's JSON, each kept run's text written once: ``web/run_output.py``)

    class InputSerializer(serializers.Serializer):
        """Besides the ranking's filters (profile, precision, mode, k: rankings.filters.RunFilterSet)."""

        user = serializers.CharField(required=False)
        sort = serializers.ChoiceField(
            choices=run_tables.run_ranking_table().sort_keys(), required=False, default=run_tables.RUN_DEFAULT_SORT
        )
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=tables.MAX_PER_PAGE, default=tables.DEFAULT_PER_PAGE
        )
        standing = serializers.ChoiceField(
            choices=[run_selectors.RANKED, run_selectors.UNRANKED, run_selectors.ALL],
            required=False,
            default=run_selectors.RANKED,
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
        filters = run_selectors.model_run_filters(request.query_params)
        if not filters.is_valid():
            raise DrfValidationError(
                {name: [e["message"] for e in errors] for name, errors in filters.errors.get_json_data().items()}
            )
        user = rankings.user_by_username(username=data["user"]) if data.get("user") else None
        runs = run_selectors.model_run_ranking(filters=filters, user=user, sort=data["sort"], standing=data["standing"])
        # what the queries are built from: their SQL compiled once per process for each (``rankings/prepared.py``)
        key = run_selectors.ranking_key(filters, "api", user.pk if user else None, data["standing"], data["sort"])
        count, ends = None, None
        if data["standing"] == run_selectors.RANKED:  # (the ranked runs are counted with their rank ranges' ends)
            count, ends = run_selectors.ranked_count_and_ends(filters=filters, user=user, sort=data["sort"])
        page = tables.paginate(runs, number=data["page"], per_page=data["page_size"], count=count)
        rows = run_rows.run_rows(page.object_list, key=key)
        if ends is not None:
            run_selectors.set_rank_ranges(rows=rows, ends=ends)
        return Response(
            {
                "count": page.paginator.count,
                "page": page.number,
                "num_pages": page.paginator.num_pages,
                "standing": data["standing"],
                "rank_metric": run_selectors.rank_metric(data["sort"]),
                "results": RunOutput(request).results(rows),  # as ModelRunOutputSerializer writes them
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
        a, b = run_selectors.model_run_pair(a_id=params.validated_data["a"], b_id=params.validated_data["b"])
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
