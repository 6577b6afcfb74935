from django.urls import path

from leaderboard.web import problem_apis, prompt_views, run_apis, submission_apis, testmode_apis, user_apis
from leaderboard.web import converters  # noqa: F401  registers <problem:...>

urlpatterns = [
    path("problems/", problem_apis.ProblemListApi.as_view(), name="api-problem-list"),
    path("problems/<problem:problem_id>/", problem_apis.ProblemDetailApi.as_view(), name="api-problem-detail"),
    path(
        "problems/<problem:problem_id>/ranking/", problem_apis.ProblemRankingApi.as_view(), name="api-problem-ranking"
    ),
    path(
        "problems/<problem:problem_id>/results/", problem_apis.ProblemResultsApi.as_view(), name="api-problem-results"
    ),
    path("submissions/", submission_apis.SubmissionCreateApi.as_view(), name="api-submission-create"),
    path(
        "submissions/<int:submission_id>/", submission_apis.SubmissionDetailApi.as_view(), name="api-submission-detail"
    ),
    path(
        "submissions/<int:submission_id>/cancel/",
        submission_apis.SubmissionCancelApi.as_view(),
        name="api-submission-cancel",
    ),
    path(
        "submissions/<int:submission_id>/publish/",
        submission_apis.SubmissionPublishApi.as_view(),
        name="api-submission-publish",
    ),
    path("model-runs/", run_apis.ModelRunCreateApi.as_view(), name="api-model-run-create"),
    path("model-runs/<int:run_id>/", run_apis.ModelRunDetailApi.as_view(), name="api-model-run-detail"),
    path("model-runs/<int:run_id>/publish/", run_apis.ModelRunPublishApi.as_view(), name="api-model-run-publish"),
    path("model-runs/<int:run_id>/attempts/", run_apis.ModelRunAttemptsApi.as_view(), name="api-model-run-attempts"),
    path("rankings/model-runs/", run_apis.ModelRunRankingApi.as_view(), name="api-ranking-model-runs"),
    path("rankings/compare/", run_apis.ModelRunCompareApi.as_view(), name="api-ranking-compare"),
    path("users/<str:username>/", user_apis.UserDetailApi.as_view(), name="api-user-detail"),
    path("prompts/", prompt_views.PromptPackApi.as_view(), name="api-prompts"),
    path("tests/", testmode_apis.TestCreateApi.as_view(), name="api-test-create"),
    path("tests/<int:test_id>/", testmode_apis.TestDetailApi.as_view(), name="api-test-detail"),
]
