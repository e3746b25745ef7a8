"""Fixtures of the crowd provider tests: a running crowd campaign with a known number of HITs, the settings
a provider needs (https public URL, fake AWS credentials: nothing here ever reaches AWS or Prolific), and
workers completing HITs through the services, standing in for the external HIT page."""

from __future__ import annotations

from decimal import Decimal

import pytest

from judging.models import Campaign, Hit, HitSlot
from judging.services import (
    assignment_start,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_build,
    worker_get_or_create,
)
from tests.judging.crowd.fake_mturk import FakeMTurk
from tests.judging.crowd.fake_prolific import TOKEN, FakeProlific
from tests.judging.factories import collection_with_grades, graded_pool

PUBLIC_URL = "https://toppref.example.org"


@pytest.fixture(autouse=True)
def crowd_settings(settings, monkeypatch, tmp_path):
    settings.TOPPREF_PUBLIC_URL = PUBLIC_URL
    settings.TOPPREF_MTURK_ENV = "sandbox"
    settings.TOPPREF_MTURK_ENDPOINT_URL = ""
    settings.TOPPREF_CROWD_TIMEOUT_SECONDS = 5.0
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "PROLIFIC_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTOPPREFTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return settings


# The fake MTurk and Prolific servers on 127.0.0.1, with the settings that point the providers at them.
@pytest.fixture
def fake_mturk(settings):
    with FakeMTurk(page_size=1) as fake:
        settings.TOPPREF_MTURK_ENDPOINT_URL = fake.url
        settings.TOPPREF_MTURK_MAX_ATTEMPTS = 2
        yield fake


@pytest.fixture
def fake_prolific(settings, monkeypatch):
    with FakeProlific(page_size=2) as fake:
        settings.TOPPREF_PROLIFIC_API_URL = fake.url
        settings.TOPPREF_PROLIFIC_WORKSPACE_ID = ""
        settings.TOPPREF_PROLIFIC_PROJECT_ID = ""
        monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
        yield fake


def running_campaign(
    *,
    provider: str = "mturk",
    hits: int = 3,
    budget_usd: Decimal | None = None,
    pay_usd: Decimal = Decimal("2.00"),
    fee_usd: Decimal = Decimal("0.40"),
    name: str = "crowd",
) -> Campaign:
    """A running crowd campaign whose one topic (6 candidates: stage 2, 15 pairs) is packed into ``hits``
    HITs of 15 / ``hits`` pairs and 3 challenges each."""
    assert 15 % hits == 0
    collection = collection_with_grades({"1_1": graded_pool("a", 6)}, name=f"{name}-pool")
    campaign = campaign_create(
        collection=collection,
        name=name,
        seed=5,
        preferences_per_hit=15 // hits,
        provider=provider,
        pay_per_hit_usd=pay_usd,
        fee_per_hit_usd=fee_usd,
        budget_usd=budget_usd,
    )
    campaign = campaign_start(campaign=campaign)
    hit_build(campaign=campaign)
    campaign.refresh_from_db()
    if budget_usd is None:
        assert Hit.objects.filter(campaign=campaign).count() == hits
    return campaign


def complete_hit(hit: Hit, worker_id: str, *, provider: str = "mturk", fail_challenges: bool = False):
    """A worker takes the HIT and answers every slot (challenges right, or all wrong), as the HIT page would."""
    worker = worker_get_or_create(provider=provider, external_id=worker_id)
    assignment = assignment_start(hit=hit, worker=worker)
    winners = {}
    for slot in HitSlot.objects.filter(hit=hit):
        if slot.is_challenge:
            right = slot.expected_winner_id
            wrong = slot.left_id if right == slot.right_id else slot.right_id
            winners[slot.position] = wrong if fail_challenges else right
        else:
            winners[slot.position] = slot.left_id
    return assignment_submit(assignment=assignment, winners=winners)
