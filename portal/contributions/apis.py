"""The REST API for problem proposals: propose one, list one's own, read one. Token auth
(``Authorization: Token <key>``) or the site session; errors follow ``leaderboard.web.api_errors.exception_handler``."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.web.permissions import MayUpload
from leaderboard.web.throttles import ApiAnonThrottle, ApiUserThrottle, UploadThrottle
from portal.contributions import selectors, services
from portal.contributions.models import ProblemProposal
from problems.registry import CATEGORIES


@extend_schema_field(OpenApiTypes.STR)
class FileOrTextField(serializers.Field):
    """A file of the folder: an uploaded file (multipart) or its text (JSON, or a multipart text field)."""

    def to_internal_value(self, data):
        if hasattr(data, "read") or isinstance(data, str):
            return data
        raise serializers.ValidationError("Send the file as a multipart upload or its text as a string.")


@extend_schema_field(
    {
        "type": "object",
        "required": ["filename", "source"],
        "properties": {"filename": {"type": "string", "example": "flat_sum.py"}, "source": {"type": "string"}},
        "description": "JSON: {filename, source}; multipart: one uploaded .py file per entry",
    }
)
class KnownAnswerField(serializers.Field):
    """One known answer: an uploaded .py file (multipart) or ``{"filename": ..., "source": ...}`` (JSON)."""

    def to_internal_value(self, data):
        if hasattr(data, "read"):
            return (data.name, data)
        if isinstance(data, dict) and isinstance(data.get("filename"), str) and isinstance(data.get("source"), str):
            return (data["filename"], data["source"])
        raise serializers.ValidationError('Each known answer is an uploaded .py file or {"filename", "source"}.')


class ProposalOutputSerializer(serializers.ModelSerializer):
    problem_id = serializers.CharField(read_only=True, help_text="category/name")
    author = serializers.CharField(source="author.get_username", read_only=True)
    known_answers = serializers.SerializerMethodField(help_text="the known answers given: kind and file name")
    url = serializers.SerializerMethodField(help_text="the proposal's page")
    api_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField(help_text="the folder as a zip, once accepted; else null")

    class Meta:
        model = ProblemProposal
        fields = [
            "id",
            "problem_id",
            "category",
            "name",
            "title",
            "version",
            "content_hash",
            "author",
            "state",
            "check_report",
            "moderator_note",
            "known_answers",
            "created_at",
            "updated_at",
            "checked_at",
            "reviewed_at",
            "url",
            "api_url",
            "download_url",
        ]

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["correct", "wrong"]},
                    "filename": {"type": "string"},
                },
            },
        }
    )
    def get_known_answers(self, obj: ProblemProposal) -> list[dict[str, str]]:
        return [{"kind": a["kind"], "filename": a["filename"]} for a in obj.solutions]

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_url(self, obj: ProblemProposal) -> str:
        return self._absolute(reverse("proposal-detail", kwargs={"proposal_id": obj.pk}))

    def get_api_url(self, obj: ProblemProposal) -> str:
        return self._absolute(reverse("api-proposal-detail", kwargs={"proposal_id": obj.pk}))

    def get_download_url(self, obj: ProblemProposal) -> str | None:
        if obj.state != ProblemProposal.State.ACCEPTED:
            return None
        return self._absolute(reverse("proposal-download", kwargs={"proposal_id": obj.pk}))


class ProposalInputSerializer(serializers.Serializer):
    """A proposed problem folder: the three files and, optionally, known answers."""

    category = serializers.CharField(help_text=f"one of {', '.join(CATEGORIES)}")
    name = serializers.CharField(help_text="the folder name: lower-case letters, digits, underscores")
    problem_toml = FileOrTextField(help_text="problem.toml: an upload (multipart) or its text")
    reference_py = FileOrTextField(help_text="reference.py: an upload (multipart) or its text")
    readme_md = FileOrTextField(help_text="README.md, the statement: an upload (multipart) or its text")
    correct = serializers.ListField(
        child=KnownAnswerField(), required=False, help_text="known answers that must pass (solutions/correct/)"
    )
    wrong = serializers.ListField(
        child=KnownAnswerField(), required=False, help_text="known answers that must fail (solutions/wrong/)"
    )


LIST_DESCRIPTION = "Your own problem proposals, newest first (the latest 200)."
CREATE_DESCRIPTION = """Propose a problem: the folder problems/<category>/<name>/ as its three files, plus optional
known answers.

Send `multipart/form-data` with the three files as uploads (or text fields) and known answers as repeated `correct` /
`wrong` file fields, or JSON with the files' text and known answers as `[{"filename", "source"}]`. The folder is
validated at once by the problem registry (400 naming the file and the field; nothing is stored). A valid one is stored
as `submitted` and checked on CPU (reference against oracle at world sizes 2 and 4, known answers): follow `api_url`
until `state` is `checked` or `failed` and read `check_report`. A moderator then accepts or rejects it on the site;
an accepted folder is merged into the catalogue by pull request."""


class ProposalListCreateApi(APIView):
    """``GET``: your own problem proposals. ``POST``: propose a problem (see ``CREATE_DESCRIPTION``)."""

    permission_classes = [IsAuthenticated, MayUpload]
    throttle_classes = [ApiAnonThrottle, ApiUserThrottle, UploadThrottle]  # UploadThrottle: POST only
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(
        operation_id="proposals_list", description=LIST_DESCRIPTION, responses=ProposalOutputSerializer(many=True)
    )
    def get(self, request):
        proposals = selectors.proposal_list(user=request.user)[:200]
        return Response(ProposalOutputSerializer(proposals, many=True, context={"request": request}).data)

    @extend_schema(
        operation_id="proposals_create",
        description=CREATE_DESCRIPTION,
        request={"multipart/form-data": ProposalInputSerializer, "application/json": ProposalInputSerializer},
        responses={201: ProposalOutputSerializer},
    )
    def post(self, request):
        params = ProposalInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        answers = [(kind, filename, source) for kind in ("correct", "wrong") for filename, source in data.get(kind, [])]
        proposal = services.proposal_create(
            user=request.user,
            category=data["category"],
            name=data["name"],
            problem_toml=data["problem_toml"],
            reference_py=data["reference_py"],
            readme_md=data["readme_md"],
            known_answers=answers,
        )
        body = ProposalOutputSerializer(proposal, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["api_url"]})


class ProposalDetailApi(APIView):
    """One proposal, for its author or a moderator (404 for anyone else): state, check report, moderator's note."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="proposals_retrieve",
        description="One of your proposals (moderators: any proposal): "
        "its state, check report and the moderator's note; `download_url` once accepted.",
        responses=ProposalOutputSerializer,
    )
    def get(self, request, proposal_id: int):
        proposal = selectors.proposal_detail(proposal_id=proposal_id, user=request.user)
        return Response(ProposalOutputSerializer(proposal, context={"request": request}).data)
