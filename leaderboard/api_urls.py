from django.urls import path

from leaderboard import apis
from leaderboard import converters  # noqa: F401  registers <problem:...>

urlpatterns = [
    path("problems/", apis.ProblemListApi.as_view(), name="api-problem-list"),
    path("problems/<problem:problem_id>/", apis.ProblemDetailApi.as_view(), name="api-problem-detail"),
    path("problems/<problem:problem_id>/ranking/", apis.ProblemRankingApi.as_view(), name="api-problem-ranking"),
    path("submissions/", apis.SubmissionCreateApi.as_view(), name="api-submission-create"),
    path("submissions/<int:submission_id>/", apis.SubmissionDetailApi.as_view(), name="api-submission-detail"),
]
