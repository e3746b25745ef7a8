"""Publishing within budget (and saying why it stopped), dry runs, the local crowd, money accounting, the
commands and the periodic sync."""

import logging
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from config.celery import app
from judging.crowd import CrowdConfigError
from judging.models import Assignment, Campaign, Hit
from judging.services.crowd_sync import campaign_ids_to_sync, campaign_sync
from judging.services.publishing import campaign_publish, campaign_spend_usd
from judging.tasks import crowd_sync_running_task
from tests.judging.crowd.conftest import complete_hit, running_campaign
from tests.judging.crowd.fake_mturk import FakeMTurk
from tests.judging.factories import collection_with_grades, graded_pool


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def fake_mturk(settings):
    with FakeMTurk() as fake:
        settings.TOPPREF_MTURK_ENDPOINT_URL = fake.url
        yield fake


@pytest.mark.django_db
def test_a_budget_for_3_hits_publishes_exactly_3_and_says_why_it_stopped(fake_mturk, caplog):
    # 5 HITs' worth of pairs, a budget for 3 at $2.00 + $0.40
    campaign = running_campaign(hits=5, budget_usd=Decimal("7.20"))

    with caplog.at_level(logging.WARNING, logger="judging.services.publishing"):
        output = run("campaign_publish", campaign.name)

    why = (
        "budget $7.20 reached: $0.00 spent, room for 3 HIT(s) at $2.40 (pay $2.00 + fee $0.40); "
        "0 HIT(s) and 6 queued pair(s) wait for more budget"
    )
    assert len(fake_mturk.hits) == 3
    assert Hit.objects.filter(campaign=campaign, published_at__isnull=False).count() == 3
    campaign.refresh_from_db()
    assert campaign.publish_note == why
    assert f"stopped: {why}" in output and why in caplog.text
    assert campaign_spend_usd(campaign=campaign) == Decimal("7.20")


@pytest.mark.django_db
def test_a_budget_lowered_after_hits_were_built_stops_publishing_before_it_is_exceeded(fake_mturk):
    campaign = running_campaign(hits=5)
    Campaign.objects.filter(pk=campaign.pk).update(budget_usd=Decimal("7.99"))

    report = campaign_publish(campaign=campaign)

    assert report.hit_numbers == [1, 2, 3] and report.waiting == 2 and len(fake_mturk.hits) == 3
    campaign.refresh_from_db()
    assert campaign.publish_note.startswith("budget $7.99 reached: $0.00 spent, room for 3 HIT(s)")
    # Nothing more is published while the budget is spent, and the spend stays within it.
    assert campaign_publish(campaign=campaign).hit_numbers == []
    assert len(fake_mturk.hits) == 3 and campaign_spend_usd(campaign=campaign) == Decimal("7.20")


@pytest.mark.django_db
def test_dry_run_prints_hits_assignments_pay_fees_and_total_and_contacts_nobody(fake_mturk):
    campaign = running_campaign(hits=5)

    output = run("campaign_publish", campaign.name, "--dry-run", "--max-hits", "4")

    assert output.splitlines() == [
        f"campaign {campaign.name} (mturk): would publish 4 HIT(s) [1-4], 1 assignment(s) each",
        "pay $8.00 ($2.00 per assignment), fees $1.60 ($0.40 per HIT), total $9.60",
        "spent before $0.00, budget none, balance not checked",
        "1 HIT(s) left unpublished",
        "dry run: nothing was published",
    ]
    assert fake_mturk.calls == []
    assert not Hit.objects.filter(campaign=campaign, published_at__isnull=False).exists()


@pytest.mark.django_db
def test_missing_aws_credentials_are_a_clear_error_at_publish_time(monkeypatch, fake_mturk):
    campaign = running_campaign(hits=3)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")

    with pytest.raises(CommandError, match="MTurk needs credentials: set AWS_ACCESS_KEY_ID"):
        run("campaign_publish", campaign.name)

    assert fake_mturk.calls == [] and not Hit.objects.filter(published_at__isnull=False).exists()


@pytest.mark.django_db
def test_an_http_public_url_is_refused_outside_debug(settings):
    settings.TOPPREF_PUBLIC_URL = "http://toppref.example.org"
    settings.DEBUG = False
    campaign = running_campaign(hits=3)

    with pytest.raises(CrowdConfigError, match="TOPPREF_PUBLIC_URL must be an https URL"):
        campaign_publish(campaign=campaign)


@pytest.mark.django_db
def test_only_a_running_crowd_campaign_publishes(fake_mturk):
    campaign = running_campaign(hits=3)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    with pytest.raises(CommandError, match="is paused: only a running campaign publishes HITs"):
        run("campaign_publish", campaign.name)
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        run("campaign_publish", "nope")


@pytest.mark.django_db
def test_the_local_crowd_publishes_nothing_outside_and_is_paid_on_sync():
    campaign = running_campaign(provider="local", hits=3)
    report = campaign_publish(campaign=campaign)
    first = Hit.objects.get(campaign=campaign, number=1)
    complete_hit(first, "alice", provider="local")
    complete_hit(Hit.objects.get(campaign=campaign, number=2), "bob", provider="local", fail_challenges=True)

    output = run("crowd_sync", campaign.name)

    assert report.hit_numbers == [1, 2, 3] and report.balance_usd is None
    first.refresh_from_db()
    assert (first.reward_usd, first.fee_usd, first.external_id) == (Decimal("2.00"), Decimal("0.40"), "")
    # The local crowd is approved and paid on submit: the sync finds nothing left to approve or pay.
    assert "approved 0, recorded 0 payment(s)" in output
    assert "money: spent $7.20 (paid $4.80, the rest owed or reserved), budget none" in output.splitlines()
    assert sorted(Assignment.objects.filter(campaign=campaign).values_list("paid_usd", flat=True)) == [
        Decimal("2.00"),
        Decimal("2.00"),
    ]
    # Two submitted at $2.40, one published and open at $2.40.
    assert campaign_spend_usd(campaign=campaign) == Decimal("7.20")
    assert campaign_sync(campaign=campaign).paid == 0


@pytest.mark.django_db
def test_campaign_create_takes_a_provider_and_its_fee():
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")

    mturk = run("campaign_create", "turk", "--collection", "tiny", "--provider", "mturk", "--pay", "1.50")
    prolific = run("campaign_create", "lific", "--collection", "tiny", "--provider", "prolific")
    local = run("campaign_create", "here", "--collection", "tiny")

    assert mturk.rstrip().endswith("provider=mturk") and "provider" not in local
    rows = dict(Campaign.objects.values_list("name", "provider"))
    assert rows == {"turk": "mturk", "lific": "prolific", "here": "local"}
    fees = dict(Campaign.objects.values_list("name", "fee_per_hit_usd"))
    assert fees == {"turk": Decimal("0.30"), "lific": Decimal("0.86"), "here": Decimal("0.40")}
    assert "provider=prolific" in prolific


@pytest.mark.django_db
def test_the_periodic_sync_queues_running_and_unsettled_crowd_campaigns(fake_mturk):
    running = running_campaign(hits=3, name="running")
    done = running_campaign(provider="local", hits=3, name="done")
    complete_hit(Hit.objects.get(campaign=done, number=1), "alice", provider="local")
    # Work submitted but not yet paid, as a provider that pays on approval leaves it (the local crowd is paid
    # on submit; here its payment is undone to stand for that state).
    Assignment.objects.filter(campaign=done).update(paid_usd=None, paid_at=None)
    Campaign.objects.filter(pk=done.pk).update(status=Campaign.Status.DONE)
    settled = running_campaign(provider="local", hits=3, name="settled")
    Campaign.objects.filter(pk=settled.pk).update(status=Campaign.Status.DONE)

    assert campaign_ids_to_sync() == [running.pk, done.pk]
    assert crowd_sync_running_task.apply().get() == 2
    # The sync of the finished local campaign paid its worker; nothing is left to sync there.
    assert campaign_ids_to_sync() == [running.pk]


@pytest.mark.django_db
def test_mturk_balance_must_also_cover_published_work_not_yet_paid(fake_mturk):
    campaign = running_campaign(hits=5)
    fake_mturk.balance = "6.00"

    first = campaign_publish(campaign=campaign)
    second = campaign_publish(campaign=campaign)

    assert first.hit_numbers == [1, 2] and second.hit_numbers == []
    assert first.note == "balance: $6.00 at mturk pays for 2 HIT(s) at $2.40"
    assert second.note == "balance: $6.00 at mturk less $4.80 owed pays for 0 HIT(s) at $2.40"
    assert len(fake_mturk.hits) == 2


@pytest.mark.django_db
def test_one_publish_at_a_time_per_campaign(fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish(campaign=campaign, max_hits=1)
    until = (timezone.now() + timedelta(minutes=5)).isoformat()
    Campaign.objects.filter(pk=campaign.pk).update(
        provider_state={**campaign.provider_state, "publish_lease_until": until}
    )

    with pytest.raises(CommandError, match="is being published by another process"):
        run("campaign_publish", campaign.name)
    synced = campaign_sync(campaign=campaign)

    assert synced.published is None and synced.notes[0].startswith("not published: campaign 'crowd' is being")
    assert len(fake_mturk.hits) == 1
    # A lease left by a crashed publisher runs out.
    Campaign.objects.filter(pk=campaign.pk).update(
        provider_state={**campaign.provider_state, "publish_lease_until": timezone.now().isoformat()}
    )
    assert campaign_publish(campaign=campaign).hit_numbers == [2, 3]
    campaign.refresh_from_db()
    assert "publish_lease_until" not in campaign.provider_state


def test_beat_syncs_crowd_campaigns_every_few_minutes(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["crowd-sync-running"]

    assert entry["task"] in app.tasks and entry["task"] == crowd_sync_running_task.name
    assert 60 <= entry["schedule"] <= 600


@pytest.mark.django_db(transaction=True)
def test_publish_more_from_the_dashboard_publishes_to_mturk_and_pause_expires_there(fake_mturk):
    from judging.services import campaign_pause, campaign_publish_more

    campaign = running_campaign(hits=3)

    campaign_publish_more(campaign=campaign)

    published = Hit.objects.filter(campaign=campaign, published_at__isnull=False)
    assert published.count() == 3 and len(fake_mturk.calls_of("CreateHITWithHITType")) == 3
    assert sorted(fake_mturk.expired) == []

    campaign_pause(campaign=campaign)

    # The pause reached MTurk at once (not at the next periodic sync): every open HIT expired there.
    assert sorted(fake_mturk.expired) == sorted(published.values_list("external_id", flat=True))
