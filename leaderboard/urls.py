from django.urls import path

from leaderboard import converters  # noqa: F401  registers <problem:...>
from leaderboard import views

urlpatterns = [
    path("", views.home, name="home"),
    path("problems/<problem:problem_id>/", views.problem_detail, name="problem-detail"),
    path("submit/", views.submission_create, name="submission-create"),
    path("submissions/", views.submission_list, name="submission-list"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission-detail"),
]
