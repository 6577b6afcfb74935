"""The REST API's submissions: create one, read it, cancel it, publish it. One view per operation, each with its own
input and output serializers, each calling one service or selector. Writes authenticate with ``Authorization: Token
<key>`` (or the site session)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluator.contract.profiles import PROFILES
from leaderboard.rankings import tables
from leaderboard.submissions import publishing, validation
from leaderboard.submissions import selectors as submissions
from leaderboard.submissions import services as submission_services
from leaderboard.web.permissions import MayUpload
from leaderboard.web.serializers import (
    PublishInputSerializer,
    SubmissionListItemSerializer,
    SubmissionOutputSerializer,
)
from leaderboard.web.throttles import UPLOAD_THROTTLES

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
