"""REST API of the judging app (Django REST Framework, documented by drf-spectacular): campaigns with their
progress and actions (``campaigns``), topics with their top-k, rounds and HITs, judgments (filterable,
``judgments``), workers (``workers``), and the planner (``plan``). Thin: validate, call a selector or a
service, serialize. Only researchers (the ``researchers`` group) and staff get anything; a researcher sees only
their own campaigns, and another's is a 404. Collections are the pools app's (``pools.api``)."""

from judging.api.base import IsResearcher, ResearcherApi
from judging.api.campaigns import (
    CampaignActionApi,
    CampaignDetailApi,
    CampaignDetailSerializer,
    CampaignHitListApi,
    CampaignListApi,
    CampaignProgressSerializer,
    CampaignRoundListApi,
    CampaignSerializer,
    CampaignTopicListApi,
    HitSerializer,
    RoundSerializer,
    TopicSerializer,
    campaign_progress_data,
)
from judging.api.judgments import CampaignJudgmentListApi, IntegerFilter, JudgmentFilter, JudgmentSerializer
from judging.api.plan import PlanApi, PlanRequestSerializer
from judging.api.workers import CampaignWorkerListApi, WorkerExcludeApi, WorkerSerializer

__all__ = [
    "CampaignActionApi",
    "CampaignDetailApi",
    "CampaignDetailSerializer",
    "CampaignHitListApi",
    "CampaignJudgmentListApi",
    "CampaignListApi",
    "CampaignProgressSerializer",
    "CampaignRoundListApi",
    "CampaignSerializer",
    "CampaignTopicListApi",
    "CampaignWorkerListApi",
    "HitSerializer",
    "IntegerFilter",
    "IsResearcher",
    "JudgmentFilter",
    "JudgmentSerializer",
    "PlanApi",
    "PlanRequestSerializer",
    "ResearcherApi",
    "RoundSerializer",
    "TopicSerializer",
    "WorkerExcludeApi",
    "WorkerSerializer",
    "campaign_progress_data",
]
