"""The REST API: one view per operation, each with its own input and output serializers, each calling one
service or selector. Writes authenticate with ``Authorization: Token <key>`` (or the site session)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.core.paginator import Paginator
from django.utils.decorators import method_decorator
from drf_spectacular.utils import (OpenApiParameter, extend_schema, extend_schema_field, extend_schema_serializer,
                                   inline_serializer)
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from evaluator.contract.profiles import PROFILES
from leaderboard import selectors, services
from leaderboard import cache  # cache.cached_page: the public read API is cached (leaderboard/cache.py)
from leaderboard.models import Problem, Submission


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
        first = next((m for msgs in response.data.values() for m in (msgs if isinstance(msgs, list) else [msgs])),
                     "The request is invalid.")
        response.data = {"detail": str(first), "errors": response.data}
    return response


# --- problems -------------------------------------------------------------------------------------------


class ProblemOutputSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    supported_profiles = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = Problem
        fields = ["id", "title", "category", "summary", "version", "content_hash", "world_sizes",
                  "supported_profiles", "codebase", "function", "url"]

    def get_url(self, obj: Problem) -> str:
        return reverse("problem-detail", kwargs={"problem_id": obj.id})


class ProblemDetailOutputSerializer(ProblemOutputSerializer):
    class Meta(ProblemOutputSerializer.Meta):
        fields = ProblemOutputSerializer.Meta.fields + ["statement", "reference_source", "presets", "tolerances",
                                                        "roofline", "is_active"]


@method_decorator(cache.cached_page, name="dispatch")
class ProblemListApi(APIView):
    @extend_schema(operation_id="problems_list", responses=ProblemOutputSerializer(many=True),
                   parameters=[OpenApiParameter("category", str, description="only this category")])
    def get(self, request):
        problems = selectors.problem_list(category=request.query_params.get("category"))
        return Response(ProblemOutputSerializer(problems, many=True).data)


@method_decorator(cache.cached_page, name="dispatch")
class ProblemDetailApi(APIView):
    @extend_schema(operation_id="problems_retrieve", responses=ProblemDetailOutputSerializer)
    def get(self, request, problem_id: str):
        problem = selectors.problem_detail(problem_id=problem_id)
        return Response(ProblemDetailOutputSerializer(problem).data)


class RankingEntryOutputSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
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


@method_decorator(cache.cached_page(scopes=cache.problem_page_scopes), name="dispatch")
class ProblemRankingApi(APIView):
    class InputSerializer(serializers.Serializer):
        profile = serializers.CharField(required=False, help_text="hardware profile; default: the site's default")

    @extend_schema(
        operation_id="problems_ranking",
        parameters=[OpenApiParameter("profile", str, enum=list(PROFILES),
                                     description="hardware profile; default: the site's default profile")],
        responses=inline_serializer("Ranking", {
            "problem": serializers.CharField(), "problem_version": serializers.IntegerField(),
            "profile": serializers.CharField(), "entries": RankingEntryOutputSerializer(many=True)}),
    )
    def get(self, request, problem_id: str):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        problem = selectors.problem_detail(problem_id=problem_id)
        requested = params.validated_data.get("profile")
        if requested and not problem.supports(requested):
            raise DrfValidationError({"profile": [
                f"{problem.id} has no ranking on {requested!r}; choose one of "
                f"{', '.join(problem.supported_profiles)}."]})
        profile = selectors.problem_default_profile(problem=problem, preferred=requested)
        entries = selectors.problem_ranking(problem=problem, profile=profile) if profile else []
        return Response({"problem": problem.id, "problem_version": problem.version, "profile": profile,
                         "entries": RankingEntryOutputSerializer(entries, many=True).data})


# --- submissions ----------------------------------------------------------------------------------------


class SubmissionOutputSerializer(serializers.ModelSerializer):
    problem = serializers.CharField(source="problem_id")
    url = serializers.SerializerMethodField(help_text="the status page")
    api_url = serializers.SerializerMethodField()
    message = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField(help_text="the evaluator's result document once finished (rank logs "
                                                         "and traceback only for its author)")
    source = serializers.SerializerMethodField(help_text="only shown to its author")

    class Meta:
        model = Submission
        fields = ["id", "problem", "profile", "problem_version", "problem_hash", "filename", "sha256", "state",
                  "verdict", "message", "created_at", "started_at", "finished_at", "worker", "url", "api_url",
                  "result", "source"]

    def get_url(self, obj: Submission) -> str:
        return self._absolute(reverse("submission-detail", kwargs={"submission_id": obj.pk}))

    def get_api_url(self, obj: Submission) -> str:
        return self._absolute(reverse("api-submission-detail", kwargs={"submission_id": obj.pk}))

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_message(self, obj: Submission) -> str:
        result = getattr(obj, "result", None)
        return result.document.get("message", "") if result else ""

    def get_result(self, obj: Submission) -> dict | None:
        request = self.context.get("request")
        return selectors.submission_result_document(submission=obj, user=request.user if request else AnonymousUser())

    def get_source(self, obj: Submission) -> str | None:
        request = self.context.get("request")
        if request and selectors.submission_source_visible(submission=obj, user=request.user):
            return obj.source
        return None


class SubmissionCreateApi(APIView):
    """Submit one solution file for one problem on one hardware profile.

    Send ``multipart/form-data`` with a ``file`` field, or JSON with ``source`` (and optionally ``filename``).
    The answer is the queued submission; follow ``api_url`` until ``state`` is ``finished``.
    """

    permission_classes = [IsAuthenticated]
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
                raise serializers.ValidationError("Send the solution as a multipart `file` field or as a JSON "
                                                  "`source` string.")
            return data

    @extend_schema(operation_id="submissions_create", request=InputSerializer,
                   responses={201: SubmissionOutputSerializer})
    def post(self, request):
        params = self.InputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        if "file" in data:
            upload = data["file"]
            source, filename = services.upload_read(upload), upload.name
        else:
            source, filename = data["source"], data.get("filename") or "solution.py"
        submission = services.submission_create(user=request.user, problem=data["problem"],
                                                profile=data["profile"], filename=filename, source=source)
        body = SubmissionOutputSerializer(submission, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class SubmissionDetailApi(APIView):
    @extend_schema(operation_id="submissions_retrieve", responses=SubmissionOutputSerializer)
    def get(self, request, submission_id: int):
        submission = selectors.submission_detail(submission_id=submission_id)
        return Response(SubmissionOutputSerializer(submission, context={"request": request}).data)


class SubmissionCancelApi(APIView):
    """Cancel your own submission while it is queued or running (403 for anyone else's; 400 once it finished).
    A queued job leaves the queue; an evaluation already running ends on its worker and its result is dropped."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="submissions_cancel", request=None, responses=SubmissionOutputSerializer)
    def post(self, request, submission_id: int):
        services.submission_cancel(submission_id=submission_id, user=request.user)
        submission = selectors.submission_detail(submission_id=submission_id)
        return Response(SubmissionOutputSerializer(submission, context={"request": request}).data)


# --- model runs -----------------------------------------------------------------------------------------
#
# Every score the API returns carries the protocol it was obtained with: ``protocol`` (mode, k, turn budget,
# tokens, wall time and a one-line ``label``) sits beside ``scores`` in every run object, and ``scores`` names
# the k it is computed at (``scored_at_k``).


def _fast(mapping) -> dict[str, float | None]:
    return {f"{float(p):g}": v for p, v in mapping.items()}


class ProtocolOutputSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=["zero-shot", "agentic"])
    k = serializers.IntegerField(help_text="attempts per problem")
    turn_budget = serializers.IntegerField(help_text="agent turns per attempt; 0 for zero-shot")
    tokens = serializers.IntegerField(help_text="tokens the whole run spent")
    wall_time_s = serializers.FloatField(help_text="wall time the whole run spent")
    label = serializers.CharField(help_text="the one-line form every page shows beside the scores")


def _protocol(run) -> dict:
    protocol = selectors.model_run_protocol(run=run)
    return {"mode": protocol.mode, "k": protocol.k, "turn_budget": protocol.turn_budget, "tokens": protocol.tokens,
            "wall_time_s": protocol.wall_time_s, "label": protocol.label()}


class RunScoresOutputSerializer(serializers.Serializer):
    scored_at_k = serializers.IntegerField(allow_null=True)
    protocol = serializers.CharField(help_text="the protocol's label, repeated so a score never travels without it")
    pass_at_k = serializers.FloatField(allow_null=True, help_text="mean unbiased pass@k over scorable problems")
    pass_at_1 = serializers.FloatField(allow_null=True, help_text="pass@1 estimated from the same attempts")
    fast_p_at_k = serializers.DictField(child=serializers.FloatField(allow_null=True),
                                        help_text='fast_p@k keyed by p: "1", "1.5", "2"')
    geomean_speedup = serializers.FloatField(allow_null=True)
    mean_roofline_fraction = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    problems_scored = serializers.IntegerField()
    problems_not_scorable = serializers.IntegerField()
    problems_not_attempted = serializers.IntegerField()
    correct_attempts = serializers.IntegerField()


def _stored_scores(run) -> dict:
    score = getattr(run, "score", None)
    label = selectors.model_run_protocol(run=run).label()
    if score is None:
        return {"scored_at_k": run.k, "protocol": label, "pass_at_k": None, "pass_at_1": None,
                "fast_p_at_k": {"1": None, "1.5": None, "2": None}, "geomean_speedup": None,
                "mean_roofline_fraction": None, "coverage": None, "problems_scored": 0, "problems_not_scorable": 0,
                "problems_not_attempted": 0, "correct_attempts": 0}
    return {"scored_at_k": score.k, "protocol": label, "pass_at_k": score.pass_at_k, "pass_at_1": score.pass_at_1,
            "fast_p_at_k": {"1": score.fast_1_at_k, "1.5": score.fast_1_5_at_k, "2": score.fast_2_at_k},
            "geomean_speedup": score.geomean_speedup, "mean_roofline_fraction": score.mean_roofline_fraction,
            "coverage": score.coverage, "problems_scored": score.problems_scored,
            "problems_not_scorable": score.problems_not_scorable,
            "problems_not_attempted": score.problems_not_attempted, "correct_attempts": score.correct_attempts}


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
    url = serializers.SerializerMethodField(help_text="the run's page")
    api_url = serializers.SerializerMethodField()
    protocol = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_url(self, obj) -> str:
        return self._absolute(reverse("model-run-detail", kwargs={"run_id": obj.pk}))

    def get_api_url(self, obj) -> str:
        return self._absolute(reverse("api-model-run-detail", kwargs={"run_id": obj.pk}))

    @extend_schema_field(ProtocolOutputSerializer)
    def get_protocol(self, obj) -> dict:
        return _protocol(obj)

    @extend_schema_field(RunScoresOutputSerializer)
    def get_scores(self, obj) -> dict:
        return _stored_scores(obj)


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


def _problem_score(s) -> dict:
    return {"problem": s.problem_id, "category": s.category, "n": s.n, "c": s.c, "scorable": s.scorable,
            "pass_at_k": s.pass_at_k, "fast_p_at_k": _fast(s.fast_p_at_k), "best_speedup": s.best_speedup,
            "geomean_speedup": s.geomean_speedup, "mean_roofline_fraction": s.mean_roofline_fraction}


class AggregateOutputSerializer(serializers.Serializer):
    problems = serializers.IntegerField(help_text="scorable problems the means are over")
    pass_at_k = serializers.FloatField(allow_null=True)
    fast_p_at_k = serializers.DictField(child=serializers.FloatField(allow_null=True))
    geomean_speedup = serializers.FloatField(allow_null=True)
    mean_roofline_fraction = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    not_scorable = serializers.ListField(child=serializers.CharField())
    not_attempted = serializers.ListField(child=serializers.CharField())


def _aggregate(a) -> dict:
    return {"problems": a.problems, "pass_at_k": a.mean_pass_at_k, "fast_p_at_k": _fast(a.mean_fast_p_at_k),
            "geomean_speedup": a.geomean_speedup, "mean_roofline_fraction": a.mean_roofline_fraction,
            "coverage": a.coverage, "not_scorable": list(a.not_scorable), "not_attempted": list(a.not_attempted)}


def _run_score(score) -> dict:
    return {"scored_at_k": score.k, "protocol": score.label(), "overall": _aggregate(score.overall),
            "by_category": {c: _aggregate(a) for c, a in score.by_category.items()},
            "problems": [_problem_score(s) for s in score.problems.values()]}


ScoreBreakdown = inline_serializer("ScoreBreakdown", {
    "scored_at_k": serializers.IntegerField(), "protocol": serializers.CharField(),
    "overall": AggregateOutputSerializer(), "by_category": serializers.DictField(child=AggregateOutputSerializer()),
    "problems": ProblemScoreOutputSerializer(many=True)})


class ModelRunCreateApi(APIView):
    """Upload a model run: one ``.zip`` or ``.tar.gz`` archive as the multipart field ``archive``.

    The whole archive is validated before anything is stored; a refusal (400) lists every problem found in
    ``errors.archive``, each naming the file and field. The answer is the queued run; follow ``api_url`` until
    ``state`` is ``finished`` (``attempts_done`` of ``attempts_total`` tells the progress).
    """

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]

    @extend_schema_serializer(component_name="ModelRunUpload")
    class InputSerializer(serializers.Serializer):
        archive = serializers.FileField(help_text="manifest.json + attempts/<category>/<name>/attempt_<i>.py "
                                                  "(+ optional trajectories/), zipped or tar.gz'd")

    @extend_schema(operation_id="model_runs_create", request=InputSerializer,
                   responses={201: ModelRunOutputSerializer})
    def post(self, request):
        params = self.InputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        upload = params.validated_data["archive"]
        run = services.model_run_create(user=request.user, filename=upload.name,
                                        data=services.archive_upload_read(upload))
        body = ModelRunOutputSerializer(run, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class ModelRunDetailOutputSerializer(ModelRunOutputSerializer):
    manifest = serializers.DictField(help_text="the manifest as uploaded (validated)")
    breakdown = serializers.SerializerMethodField(help_text="scores per problem and per category, computed now")

    @extend_schema_field(ScoreBreakdown)
    def get_breakdown(self, obj) -> dict:
        return _run_score(selectors.model_run_score(run=obj))


@method_decorator(cache.cached_page(scopes=cache.run_page_scopes), name="dispatch")
class ModelRunDetailApi(APIView):
    """A model run: its progress (``attempts_done`` of ``attempts_total``; ``state`` is ``finished`` when every
    attempt is), its protocol, its stored scores and a per-problem and per-category breakdown."""

    @extend_schema(operation_id="model_runs_retrieve", responses=ModelRunDetailOutputSerializer)
    def get(self, request, run_id: int):
        run = selectors.model_run_detail(run_id=run_id)
        return Response(ModelRunDetailOutputSerializer(run, context={"request": request}).data)


class AttemptOutputSerializer(serializers.Serializer):
    submission_id = serializers.IntegerField()
    problem = serializers.CharField(source="problem_id")
    category = serializers.CharField()
    attempt = serializers.IntegerField()
    state = serializers.CharField()
    verdict = serializers.CharField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)
    roofline_fraction = serializers.FloatField(allow_null=True)
    solution_median_us = serializers.FloatField(allow_null=True)
    baseline_median_us = serializers.FloatField(allow_null=True)
    result_url = serializers.SerializerMethodField(help_text="the submission, with its whole result document")

    def get_result_url(self, obj) -> str:
        path = reverse("api-submission-detail", kwargs={"submission_id": obj.submission_id})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


@method_decorator(cache.cached_page(scopes=cache.run_page_scopes), name="dispatch")
class ModelRunAttemptsApi(APIView):
    @extend_schema(operation_id="model_runs_attempts", responses=inline_serializer("ModelRunAttempts", {
        "model_run": serializers.IntegerField(), "protocol": ProtocolOutputSerializer(),
        "attempts": AttemptOutputSerializer(many=True)}))
    def get(self, request, run_id: int):
        run = selectors.model_run_detail(run_id=run_id)
        attempts = selectors.model_run_attempts(run=run)
        return Response({"model_run": run.pk, "protocol": _protocol(run),
                         "attempts": AttemptOutputSerializer(attempts, many=True, context={"request": request}).data})


@method_decorator(cache.cached_page(scopes=cache.ranking_scopes), name="dispatch")
class ModelRunRankingApi(APIView):
    """The overall ranking of model runs (the same rows, order and filters as /runs/)."""

    class InputSerializer(serializers.Serializer):
        profile = serializers.CharField(required=False)
        precision = serializers.CharField(required=False)
        mode = serializers.ChoiceField(choices=["zero-shot", "agentic"], required=False)
        k = serializers.IntegerField(required=False, min_value=1)
        user = serializers.CharField(required=False)
        sort = serializers.ChoiceField(choices=[s for key in selectors.RUN_SORTS for s in (key, f"-{key}")],
                                       required=False, default="-pass_at_k")
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)

    @extend_schema(operation_id="rankings_model_runs", parameters=[InputSerializer],
                   responses=inline_serializer("ModelRunRanking", {
                       "count": serializers.IntegerField(), "page": serializers.IntegerField(),
                       "num_pages": serializers.IntegerField(), "results": ModelRunOutputSerializer(many=True)}))
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        user = selectors.user_by_username(username=data["user"]) if data.get("user") else None
        runs = selectors.model_run_ranking(
            filters=selectors.RunFilters(profile=data.get("profile"), precision=data.get("precision"),
                                         mode=data.get("mode"), k=data.get("k")),
            user=user, sort=data["sort"])
        page = Paginator(runs, data["page_size"]).get_page(data["page"])
        return Response({"count": page.paginator.count, "page": page.number, "num_pages": page.paginator.num_pages,
                         "results": ModelRunOutputSerializer(page.object_list, many=True,
                                                             context={"request": request}).data})


@method_decorator(cache.cached_page(scopes=cache.comparison_scopes), name="dispatch")
class ModelRunCompareApi(APIView):
    """Two runs side by side, both scored at the smaller of their ks."""

    class InputSerializer(serializers.Serializer):
        a = serializers.IntegerField()
        b = serializers.IntegerField()

    @extend_schema(operation_id="rankings_compare", parameters=[InputSerializer],
                   responses=inline_serializer("ModelRunComparison", {
                       "scored_at_k": serializers.IntegerField(), "a": ModelRunOutputSerializer(),
                       "b": ModelRunOutputSerializer(), "a_breakdown": ScoreBreakdown, "b_breakdown": ScoreBreakdown}))
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        comparison = selectors.model_run_comparison(a=selectors.model_run_detail(run_id=params.validated_data["a"]),
                                                    b=selectors.model_run_detail(run_id=params.validated_data["b"]))
        context = {"request": request}
        return Response({"scored_at_k": comparison.k,
                         "a": ModelRunOutputSerializer(comparison.a, context=context).data,
                         "b": ModelRunOutputSerializer(comparison.b, context=context).data,
                         "a_breakdown": _run_score(comparison.a_score),
                         "b_breakdown": _run_score(comparison.b_score)})


@method_decorator(cache.cached_page(scopes=cache.problem_page_scopes), name="dispatch")
class ProblemResultsApi(APIView):
    """A problem's figures on one profile: the baseline's time, the roofline and every passed speedup."""

    class InputSerializer(serializers.Serializer):
        profile = serializers.CharField(required=False)

    @extend_schema(operation_id="problems_results", parameters=[InputSerializer],
                   responses=inline_serializer("ProblemResults", {
                       "problem": serializers.CharField(), "problem_version": serializers.IntegerField(),
                       "profile": serializers.CharField(), "baseline_median_us": serializers.FloatField(allow_null=True),
                       "baseline_evaluations": serializers.IntegerField(),
                       "roofline_us": serializers.FloatField(allow_null=True),
                       "roofline_bound": serializers.CharField(allow_null=True),
                       "speedups": serializers.ListField(child=serializers.FloatField())}))
    def get(self, request, problem_id: str):
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        problem = selectors.problem_detail(problem_id=problem_id)
        profile = selectors.problem_default_profile(problem=problem, preferred=params.validated_data.get("profile"))
        baseline = selectors.problem_baseline(problem=problem, profile=profile) if profile else None
        return Response({
            "problem": problem.id, "problem_version": problem.version, "profile": profile,
            "baseline_median_us": baseline.median_us if baseline else None,
            "baseline_evaluations": baseline.evaluations if baseline else 0,
            "roofline_us": baseline.roofline_us if baseline else None,
            "roofline_bound": baseline.roofline_bound if baseline else None,
            "speedups": selectors.problem_speedups(problem=problem, profile=profile) if profile else [],
        })


class BestSolutionOutputSerializer(serializers.Serializer):
    problem = serializers.CharField(source="problem_id")
    profile = serializers.CharField()
    submission_id = serializers.IntegerField()
    speedup = serializers.FloatField(allow_null=True)
    roofline_fraction = serializers.FloatField(allow_null=True)
    submitted_at = serializers.DateTimeField()


@method_decorator(cache.cached_page(scopes=cache.user_page_scopes), name="dispatch")
class UserDetailApi(APIView):
    @extend_schema(operation_id="users_retrieve", responses=inline_serializer("UserDetail", {
        "username": serializers.CharField(), "model_runs": ModelRunOutputSerializer(many=True),
        "best_solutions": BestSolutionOutputSerializer(many=True)}))
    def get(self, request, username: str):
        person = selectors.user_by_username(username=username)
        runs = selectors.model_run_ranking(user=person)
        return Response({"username": person.get_username(),
                         "model_runs": ModelRunOutputSerializer(runs, many=True, context={"request": request}).data,
                         "best_solutions": BestSolutionOutputSerializer(
                             selectors.user_best_solutions(user=person), many=True).data})
