"""Routes of the judging app's API under /api/ (see config/urls.py)."""

from django.urls import path

from judging import api

urlpatterns = [
    path("campaigns/", api.CampaignListApi.as_view(), name="api-campaigns"),
    path("campaigns/<slug:name>/", api.CampaignDetailApi.as_view(), name="api-campaign"),
    path(
        "campaigns/<slug:name>/start/",
        api.CampaignActionApi.as_view(action_name="start"),
        name="api-campaign-start",
    ),
    path(
        "campaigns/<slug:name>/pause/",
        api.CampaignActionApi.as_view(action_name="pause"),
        name="api-campaign-pause",
    ),
    path(
        "campaigns/<slug:name>/resume/",
        api.CampaignActionApi.as_view(action_name="resume"),
        name="api-campaign-resume",
    ),
    path("campaigns/<slug:name>/topics/", api.CampaignTopicListApi.as_view(), name="api-campaign-topics"),
    path(
        "campaigns/<slug:name>/judgments/",
        api.CampaignJudgmentListApi.as_view(),
        name="api-campaign-judgments",
    ),
    path("campaigns/<slug:name>/workers/", api.CampaignWorkerListApi.as_view(), name="api-campaign-workers"),
    path(
        "campaigns/<slug:name>/workers/<int:worker_id>/exclude/",
        api.WorkerExcludeApi.as_view(),
        name="api-campaign-worker-exclude",
    ),
    path("campaigns/<slug:name>/rounds/", api.CampaignRoundListApi.as_view(), name="api-campaign-rounds"),
    path("campaigns/<slug:name>/hits/", api.CampaignHitListApi.as_view(), name="api-campaign-hits"),
    path("plan/", api.PlanApi.as_view(), name="api-plan"),
]
