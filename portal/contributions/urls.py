from django.urls import path

from portal.contributions import apis, views

urlpatterns = [
    path("contribute/", views.proposal_create, name="proposal-create"),
    path("contribute/proposals/", views.proposal_list, name="proposal-list"),
    path("contribute/proposals/<int:proposal_id>/", views.proposal_detail, name="proposal-detail"),
    path("contribute/proposals/<int:proposal_id>/review/", views.proposal_review, name="proposal-review"),
    path("contribute/proposals/<int:proposal_id>/recheck/", views.proposal_recheck, name="proposal-recheck"),
    path("contribute/proposals/<int:proposal_id>/folder.zip", views.proposal_download, name="proposal-download"),
    path("contribute/review/", views.review_queue, name="proposal-review-queue"),
    path("api/proposals/", apis.ProposalListCreateApi.as_view(), name="api-proposal-list"),
    path("api/proposals/<int:proposal_id>/", apis.ProposalDetailApi.as_view(), name="api-proposal-detail"),
]
