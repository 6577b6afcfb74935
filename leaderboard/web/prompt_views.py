"""Prompt packs on the site: a problem's prompts as a JSONL download (``/problems/<id>/prompts.jsonl``) and a pack
through the API (``/api/prompts/?backend=&hardware=``). Both render from the problem folders with
``evaluator/prompts.py`` (through ``leaderboard.beyond_contract``), exactly what ``arena prompts`` writes."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluator.contract.profiles import PROFILES
from leaderboard import beyond_contract


def _jsonl(rows: list[dict], filename: str) -> HttpResponse:
    response = HttpResponse(beyond_contract.prompts_jsonl(rows), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def problem_prompts(request, problem_id: str):
    """Every prompt of one problem: each profile it runs on × each backend with a guide (``?backend=``,
    ``?hardware=`` narrow it)."""
    try:
        problem = beyond_contract.registry_problem(problem_id)
    except ValueError:
        raise Http404("no such problem") from None
    backend, hardware = request.GET.get("backend"), request.GET.get("hardware")
    rows = [
        r
        for r in beyond_contract.problem_prompts(problem)
        if (not backend or r["backend"] == backend) and (not hardware or r["hardware"] == hardware)
    ]
    return _jsonl(rows, f"prompts-{problem.id.replace('/', '-')}-v{problem.version}.jsonl")


class _JsonlFormat(BaseRenderer):
    """Lets ``?format=jsonl`` through DRF's content negotiation (which answered 404 "Not found." for a format no
    renderer names); the view writes the lines itself."""

    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):  # an error's body, as JSON
        return JSONRenderer().render(data, accepted_media_type, renderer_context)


class PromptPackApi(APIView):
    """A prompt pack: the exact task each problem that runs on ``hardware`` gives a model with ``backend``, and the
    pack's version to name in a model run's manifest (``prompt_pack``). ``format=jsonl`` answers one line per
    prompt, as ``arena prompts`` writes."""

    renderer_classes = [JSONRenderer, _JsonlFormat]

    @extend_schema(
        operation_id="prompts_pack",
        parameters=[
            OpenApiParameter("backend", str, description="cuda, triton, symmetric-memory, ..."),
            OpenApiParameter("hardware", str, enum=list(PROFILES)),
            OpenApiParameter("problem", str, description="only this problem (repeatable)"),
            OpenApiParameter("format", str, enum=["json", "jsonl"]),
        ],
        responses=inline_serializer(
            "PromptPackOutput",
            {
                "backend": serializers.CharField(),
                "hardware": serializers.CharField(),
                "pack_version": serializers.CharField(),
                "count": serializers.IntegerField(),
                "prompts": serializers.ListField(child=serializers.DictField()),
            },
        ),
    )
    def get(self, request):
        backend = request.query_params.get("backend", "")
        hardware = request.query_params.get("hardware", "")
        backends = beyond_contract.prompt_backends()
        if backend not in backends:
            raise ValidationError({"backend": [f"choose one of {', '.join(backends)}"]})
        if hardware not in PROFILES:
            raise ValidationError({"hardware": [f"choose one of {', '.join(PROFILES)}"]})
        only = request.query_params.getlist("problem")
        problems = [p for p in beyond_contract.registry_catalogue().values() if not only or p.id in only]
        rows = beyond_contract.prompt_pack(backend, hardware, problems)
        if request.query_params.get("format") == "jsonl":
            return _jsonl(rows, f"prompts-{backend}-{hardware}.jsonl")
        return Response(
            {
                "backend": backend,
                "hardware": hardware,
                "pack_version": rows[0]["pack_version"] if rows else "",
                "count": len(rows),
                "prompts": rows,
            }
        )
