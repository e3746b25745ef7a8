"""Crowd providers behind one interface (``judging.crowd.base.CrowdProvider``): the local crowd, Amazon
Mechanical Turk and Prolific. Called from the publishing and syncing services, which Celery tasks and the
``campaign_publish`` / ``crowd_sync`` commands run; never from a web request. Credentials are read when a
provider is built, i.e. at publish time, never at import time."""

from __future__ import annotations

import os
from decimal import Decimal

from django.conf import settings

from judging.crowd.base import (
    CampaignInfo,
    CrowdConfigError,
    CrowdError,
    CrowdProvider,
    CrowdRequestError,
    CrowdTransientError,
    HitInfo,
    Published,
    Work,
    WorkStatus,
)

__all__ = [
    "CampaignInfo",
    "CrowdConfigError",
    "CrowdError",
    "CrowdProvider",
    "CrowdRequestError",
    "CrowdTransientError",
    "HitInfo",
    "Published",
    "Work",
    "WorkStatus",
    "fee_usd",
    "llm_provider_build",
    "provider_build",
]


def provider_build(name: str, *, local_fee_usd: Decimal = Decimal("0")) -> CrowdProvider:
    """The provider called ``name``, configured from the settings and the environment."""
    if name == "local":
        from judging.crowd.local import LocalProvider

        return LocalProvider(fee_usd=local_fee_usd)
    if name == "mturk":
        from judging.crowd.mturk import MTurkProvider

        return MTurkProvider(
            environment=settings.TOPPREF_MTURK_ENV,
            endpoint_url=settings.TOPPREF_MTURK_ENDPOINT_URL,
            frame_height=settings.TOPPREF_MTURK_FRAME_HEIGHT,
            fee_rate=settings.TOPPREF_MTURK_FEE_RATE,
            ten_plus_fee_rate=settings.TOPPREF_MTURK_TEN_PLUS_FEE_RATE,
            timeout_seconds=settings.TOPPREF_CROWD_TIMEOUT_SECONDS,
            max_attempts=settings.TOPPREF_MTURK_MAX_ATTEMPTS,
        )
    if name == "prolific":
        from judging.crowd.prolific import ProlificProvider

        return ProlificProvider(
            token=os.environ.get("PROLIFIC_API_TOKEN", ""),
            api_url=settings.TOPPREF_PROLIFIC_API_URL,
            workspace_id=settings.TOPPREF_PROLIFIC_WORKSPACE_ID,
            project_id=settings.TOPPREF_PROLIFIC_PROJECT_ID,
            fee_rate=settings.TOPPREF_PROLIFIC_FEE_RATE,
            timeout_seconds=settings.TOPPREF_CROWD_TIMEOUT_SECONDS,
        )
    raise CrowdConfigError(
        f"unknown crowd provider {name!r} (local, mturk or prolific; llm: llm_provider_build)"
    )


def llm_provider_build(model: str):
    """The language model ``model`` at ``TOPPREF_LLM_BASE_URL`` (key ``TOPPREF_LLM_API_KEY``): a
    ``judging.crowd.llm.LlmProvider``."""
    from judging.crowd.llm import LlmProvider

    return LlmProvider(
        base_url=settings.TOPPREF_LLM_BASE_URL,
        api_key=settings.TOPPREF_LLM_API_KEY,
        model=model,
        timeout_seconds=settings.TOPPREF_LLM_TIMEOUT_SECONDS,
        max_retries=settings.TOPPREF_LLM_MAX_RETRIES,
    )


def fee_usd(name: str, *, reward_usd: Decimal, assignments: int = 1) -> Decimal:
    """A provider's fee on a reward without building a client (no credentials needed): for dry runs and
    for ``campaign_create``'s default fee."""
    from judging.crowd.mturk import mturk_fee_usd
    from judging.crowd.prolific import prolific_fee_usd

    if name == "mturk":
        return mturk_fee_usd(
            reward_usd,
            assignments=assignments,
            rate=settings.TOPPREF_MTURK_FEE_RATE,
            ten_plus_rate=settings.TOPPREF_MTURK_TEN_PLUS_FEE_RATE,
        )
    if name == "prolific":
        return prolific_fee_usd(reward_usd, assignments=assignments, rate=settings.TOPPREF_PROLIFIC_FEE_RATE)
    return Decimal("0")
