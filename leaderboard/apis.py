"""The REST API: one view per operation, each with its own input and output serializers, each calling one
service or selector. Writes authenticate with ``Authorization: Token <key>`` (or the site session)."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from evaluator.profiles import PROFILES
from leaderboard import selectors, services
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


class ProblemListApi(APIView):
    @extend_schema(operation_id="problems_list", responses=ProblemOutputSerializer(many=True),
                   parameters=[OpenApiParameter("category", str, description="only this category")])
    def get(self, request):
        problems = selectors.problem_list(category=request.query_params.get("category"))
        return Response(ProblemOutputSerializer(problems, many=True).data)


class ProblemDetailApi(APIView):
    @extend_schema(operation_id="problems_retrieve", responses=ProblemDetailOutputSerializer)
    def get(self, request, problem_id: str):
        problem = selectors.problem_detail(problem_id=problem_id)
        return Response(ProblemDetailOutputSerializer(problem).data)


class RankingEntryOutputSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    username = serializers.CharField()
    submission_id = serializers.IntegerField()
    speedup = serializers.FloatField(allow_null=True)
    speedup_ci_low = serializers.FloatField(allow_null=True)
    speedup_ci_high = serializers.FloatField(allow_null=True)
    baseline_median_us = serializers.FloatField(allow_null=True)
    solution_median_us = serializers.FloatField(allow_null=True)
    roofline_fraction = serializers.FloatField(allow_null=True)
    submitted_at = serializers.DateTimeField()


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
    result = serializers.SerializerMethodField(help_text="the evaluator's result document once finished")
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
        result = getattr(obj, "result", None)
        return result.document if result else None

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
