"""Test mode's API: ``POST /api/tests/`` queues an unranked test, ``GET /api/tests/<id>/`` follows it (the owner
only; 404 for anyone else), ``GET /api/tests/`` lists the caller's own. Creating a test is limited per token
(``leaderboard.web.throttles.TestModeThrottle``): every answer to a POST carries the ``X-RateLimit-*`` headers, a
refusal is 429 with ``Retry-After``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from evaluator.contract.profiles import PROFILES
from leaderboard.models import TestRun
from leaderboard.submissions import validation
from leaderboard.testmode import selectors, services
from leaderboard.web.permissions import MayUpload
from leaderboard.web.throttles import TestModeThrottle


class TestRunOutputSerializer(serializers.ModelSerializer):
    __test__ = False
    api_url = serializers.SerializerMethodField()
    ranked = serializers.SerializerMethodField()
    result = serializers.JSONField(source="document", allow_null=True)
    quick_timing = serializers.BooleanField(source="timing")

    class Meta:
        model = TestRun
        fields = [
            "id",
            "api_url",
            "problem",
            "profile",
            "problem_version",
            "filename",
            "sha256",
            "quick_timing",
            "ranked",
            "state",
            "verdict",
            "created_at",
            "started_at",
            "finished_at",
            "result",
        ]

    def get_api_url(self, obj: TestRun) -> str:
        return reverse("api-test-detail", args=[obj.pk], request=self.context.get("request"))

    def get_ranked(self, obj: TestRun) -> bool:
        return False


class TestCreateApi(APIView):
    """Test one solution file without ranking it: the same sandbox and judge as a submission, on the profile's
    fast lane, fewer trials, and quick timing when ``timing`` is true. Send ``multipart/form-data`` with ``file`` or
    JSON with ``source``. Follow ``api_url`` until ``state`` is ``finished``; the result is visible to you only.
    A file that cannot be imported at all (a syntax error, no ``solution``, not UTF-8 text) is a finished test at
    once: ``verdict`` ``compile_error`` with ``diagnostics`` naming the line. 400 is kept for requests malformed as
    requests (no problem or profile, an unknown one, both or neither of ``file`` and ``source``)."""

    permission_classes = [IsAuthenticated, MayUpload]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    class TestCreateInputSerializer(serializers.Serializer):  # a name of its own: the schema's TestCreateInputRequest
        problem = serializers.CharField(help_text="problem id, e.g. collectives/all_reduce")
        profile = serializers.CharField(help_text=f"hardware profile: one of {', '.join(PROFILES)}")
        file = serializers.FileField(
            required=False, allow_empty_file=True, help_text="the solution .py file (multipart)"
        )
        source = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False, help_text="the solution source (JSON)"
        )
        filename = serializers.CharField(required=False, help_text="a name for pasted source; default solution.py")
        timing = serializers.BooleanField(
            required=False, default=False, help_text="quick timing (fewer iterations than ranked; marked as such)"
        )

        def validate(self, data):
            if ("file" in data) == ("source" in data):
                raise serializers.ValidationError(
                    "Send the solution as a multipart `file` field or as a JSON `source` string (one of the two)."
                )
            return data

    def get_throttles(self):
        if self.request.method != "POST":
            return []
        if not hasattr(self, "_test_throttle"):
            self._test_throttle = TestModeThrottle()
        return [self._test_throttle]

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        throttle = getattr(self, "_test_throttle", None)
        if throttle is not None and throttle.now:
            for name, value in throttle.headers().items():
                response[name] = value
        return response

    @extend_schema(operation_id="tests_list", responses=TestRunOutputSerializer(many=True))
    def get(self, request):
        tests = selectors.test_run_list(user=request.user)[:50]
        return Response(TestRunOutputSerializer(tests, many=True, context={"request": request}).data)

    @extend_schema(
        operation_id="tests_create", request=TestCreateInputSerializer, responses={201: TestRunOutputSerializer}
    )
    def post(self, request):
        params = self.TestCreateInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        if "file" in data:
            source, filename = validation.upload_read(data["file"]), data["file"].name
        else:
            source, filename = data["source"], data.get("filename") or "solution.py"
        test = services.test_run_create(
            user=request.user,
            problem=data["problem"],
            profile=data["profile"],
            filename=filename,
            source=source,
            timing=data["timing"],
        )
        body = TestRunOutputSerializer(test, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class TestDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="tests_retrieve", responses=TestRunOutputSerializer)
    def get(self, request, test_id: int):
        test = selectors.test_run_detail(test_id=test_id, user=request.user)
        return Response(TestRunOutputSerializer(test, context={"request": request}).data)
