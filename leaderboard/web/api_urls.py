from django.urls import path

from leaderboard.web import apis, prompt_views, testmode_apis
from leaderboard.web import converters  # noqa: F401  registers <problem:...>

urlpatterns = [
    path("problems/", apis.ProblemListApi.as_view(), name="api-problem-list"),
    path("problems/<problem:problem_id>/", apis.ProblemDetailApi.as_view(), name="api-problem-detail"),
    path("problems/<problem:problem_id>/ranking/", apis.ProblemRankingApi.as_view(), name="api-problem-ranking"),
    path("problems/<problem:problem_id>/results/", apis.ProblemResultsApi.as_view(), name="api-problem-results"),
    path("submissions/", apis.SubmissionCreateApi.as_view(), name="api-submission-create"),
    path("submissions/<int:submission_id>/", apis.SubmissionDetailApi.as_view(), name="api-submission-detail"),
    path("submissions/<int:submission_id>/cancel/", apis.SubmissionCancelApi.as_view(), name="api-submission-cancel"),
    path(
        "submissions/<int:submission_id>/publish/", apis.SubmissionPublishApi.as_view(), name="api-submission-publish"
    ),
    path("model-runs/", apis.ModelRunCreateApi.as_view(), name="api-model-run-create"),
    path("model-runs/<int:run_id>/", apis.ModelRunDetailApi.as_view(), name="api-model-run-detail"),
    path("model-runs/<int:run_id>/publish/", apis.ModelRunPublishApi.as_view(), name="api-model-run-publish"),
    path("model-runs/<int:run_id>/attempts/", apis.ModelRunAttemptsApi.as_view(), name="api-model-run-attempts"),
    path("rankings/model-runs/", apis.ModelRunRankingApi.as_view(), name="api-ranking-model-runs"),
    path("rankings/compare/", apis.ModelRunCompareApi.as_view(), name="api-ranking-compare"),
    path("users/<str:username>/", apis.UserDetailApi.as_view(), name="api-user-detail"),
    path("prompts/", prompt_views.PromptPackApi.as_view(), name="api-prompts"),
    path("tests/", testmode_apis.TestCreateApi.as_view(), name="api-test-create"),
    path("tests/<int:test_id>/", testmode_apis.TestDetailApi.as_view(), name="api-test-detail"),
]
