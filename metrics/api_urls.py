"""Routes of the metrics app's API under /api/ (see config/urls.py)."""

from django.urls import path

from metrics import api

urlpatterns = [
    path("campaigns/<slug:name>/runs/", api.CampaignRunListApi.as_view(), name="api-campaign-runs"),
    path(
        "campaigns/<slug:name>/runs/score/",
        api.CampaignRunsScoreApi.as_view(),
        name="api-campaign-runs-score",
    ),
    path(
        "campaigns/<slug:name>/leaderboard/",
        api.CampaignLeaderboardApi.as_view(),
        name="api-campaign-leaderboard",
    ),
    path("campaigns/<slug:name>/exports/", api.CampaignExportListApi.as_view(), name="api-campaign-exports"),
    path("exports/<int:export_id>/", api.ExportDetailApi.as_view(), name="api-export"),
    path("exports/<int:export_id>/download/", api.ExportDownloadApi.as_view(), name="api-export-download"),
]
