from django.urls import path

from leaderboard.web import converters  # noqa: F401  registers <problem:...>
from leaderboard.web import (
    dataset_views,
    problem_views,
    prompt_views,
    run_views,
    submission_views,
    user_views,
    write_solution,
)

urlpatterns = [
    path("", problem_views.home, name="home"),
    path("problems/<problem:problem_id>/", problem_views.problem_detail, name="problem-detail"),
    path("problems/<problem:problem_id>/prompts/", prompt_views.problem_prompts, name="problem-prompts"),
    path(
        "problems/<problem:problem_id>/starter/<slug:backend>/", write_solution.problem_starter, name="problem-starter"
    ),
    path("datasets/", dataset_views.datasets, name="datasets"),
    path("datasets/<str:config>.<str:fmt>", dataset_views.dataset_download, name="dataset-download"),
    path("submit/", submission_views.submission_create, name="submission-create"),
    path("submissions/", submission_views.submission_list, name="submission-list"),
    path("submissions/<int:submission_id>/", submission_views.submission_detail, name="submission-detail"),
    path("submissions/<int:submission_id>/cancel/", submission_views.submission_cancel, name="submission-cancel"),
    path("submissions/<int:submission_id>/source/", submission_views.submission_source, name="submission-source"),
    path("submissions/<int:submission_id>/publish/", submission_views.submission_publish, name="submission-publish"),
    path("runs/<int:run_id>/publish/", run_views.model_run_publish, name="model-run-publish"),
    path("queues/", submission_views.queue_overview, name="queue-overview"),
    path("runs/", run_views.model_run_list, name="model-run-list"),
    path("runs/upload/", run_views.model_run_create, name="model-run-create"),
    path("runs/compare/", run_views.model_run_compare, name="model-run-compare"),
    path("runs/<int:run_id>/", run_views.model_run_detail, name="model-run-detail"),
    path("users/<str:username>/", user_views.user_detail, name="user-detail"),
]
