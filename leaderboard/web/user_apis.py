"""The REST API's people: one user's runs and best solutions."""

from __future__ import annotations

from django.utils.decorators import method_decorator
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.rankings import run_selectors
from leaderboard.rankings import selectors as rankings
from leaderboard.web import cache  # cache.cached_page: the public read API is cached (leaderboard/web/cache.py)
from leaderboard.web.serializers import (
    BestSolutionOutputSerializer,
    ModelRunOutputSerializer,
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
        runs = run_selectors.model_run_ranking(user=person)
        return Response(
            {
                "username": person.get_username(),
                "model_runs": ModelRunOutputSerializer(runs, many=True, context={"request": request}).data,
                "best_solutions": BestSolutionOutputSerializer(
                    rankings.user_best_solutions(user=person), many=True
                ).data,
            }
        )
