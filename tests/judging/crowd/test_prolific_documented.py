"""Prolific as its own API description documents it (../shared/notes/prolific.md, section 0), against the
fake server on 127.0.0.1: START only from PAUSED, studies in the configured project and workspace, a
nullable balance, the fee from the study cost calculator, Prolific's minimum time limit, paging that never
relies on a 404, and the SCREENED OUT and UNKNOWN submission statuses."""

from datetime import timedelta
from decimal import Decimal

import pytest

from judging.crowd import CampaignInfo, CrowdConfigError, WorkStatus
from judging.crowd.prolific import ProlificProvider, minimum_allowed_minutes
from judging.models import Assignment, Campaign, Hit
from judging.services import assignment_start, hit_build, hit_discard, worker_get_or_create
from judging.services.crowd_sync import campaign_sync
from judging.services.publishing import campaign_info, campaign_publish
from tests.judging.crowd.conftest import running_campaign
from tests.judging.crowd.fake_prolific import TOKEN, FakeProlific


@pytest.fixture
def fake_prolific(settings, monkeypatch):
    with FakeProlific(page_size=2) as fake:
        settings.TOPPREF_PROLIFIC_API_URL = fake.url
        settings.TOPPREF_PROLIFIC_WORKSPACE_ID = ""
        settings.TOPPREF_PROLIFIC_PROJECT_ID = ""
        monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
        yield fake


def provider(fake: FakeProlific, **kwargs) -> ProlificProvider:
    return ProlificProvider(token=TOKEN, api_url=fake.url, backoff_seconds=0, **kwargs)


def study_transitions(fake: FakeProlific) -> list[str]:
    return [body["action"] for method, path, body in fake.calls if path.endswith("/transition/")]


@pytest.mark.django_db
def test_more_places_reactivate_a_study_awaiting_review_without_start(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    (study,) = fake_prolific.studies.values()
    study["status"] = "AWAITING REVIEW"  # every place was taken and submitted
    hit_discard(hit=Hit.objects.get(campaign=campaign, number=1))
    hit_build(campaign=campaign)

    report = campaign_publish(campaign=campaign)

    assert report.hit_numbers == [4]
    assert study["status"] == "ACTIVE" and study["total_available_places"] == 4
    assert study_transitions(fake_prolific) == ["PUBLISH"]  # START is refused from AWAITING REVIEW


@pytest.mark.django_db
def test_a_study_paused_at_prolific_is_started_after_its_places_grow(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    (study,) = fake_prolific.studies.values()
    study["status"] = "PAUSED"
    hit_discard(hit=Hit.objects.get(campaign=campaign, number=1))
    hit_build(campaign=campaign)

    campaign_publish(campaign=campaign)

    assert study["status"] == "ACTIVE" and study_transitions(fake_prolific) == ["PUBLISH", "START"]


@pytest.mark.django_db
def test_studies_go_to_the_configured_workspace_and_project(fake_prolific, settings):
    fake_prolific.workspaces = [{"id": "ws-other", "title": "other"}, {"id": "ws-lab", "title": "lab"}]
    fake_prolific.projects = {"ws-lab": [{"id": "p-a", "title": "a"}, {"id": "p-b", "title": "b"}]}
    settings.TOPPREF_PROLIFIC_WORKSPACE_ID = "ws-lab"
    settings.TOPPREF_PROLIFIC_PROJECT_ID = "p-b"
    campaign = running_campaign(provider="prolific", hits=3)

    campaign_publish(campaign=campaign)

    (study,) = fake_prolific.studies.values()
    (group,) = fake_prolific.groups.values()
    assert study["project"] == "p-b" and group["workspace_id"] == "ws-lab"
    assert fake_prolific.calls_of("GET", "/api/v1/workspaces/") == []  # no guessing when configured


@pytest.mark.django_db
def test_an_account_with_several_workspaces_must_say_which(fake_prolific):
    fake_prolific.workspaces = [{"id": "ws-b", "title": "b"}, {"id": "ws-a", "title": "a"}]
    campaign = running_campaign(provider="prolific", hits=3)

    with pytest.raises(CrowdConfigError, match=r"TOPPREF_PROLIFIC_WORKSPACE_ID .*ws-b \(b\), ws-a \(a\)"):
        provider(fake_prolific).prepare(campaign=campaign_info(campaign=campaign), stages=[2])
    assert fake_prolific.studies == {} and fake_prolific.groups == {}


@pytest.mark.django_db
def test_a_workspace_with_several_projects_must_say_which(fake_prolific, settings):
    fake_prolific.projects = {"workspace-1": [{"id": "p-a", "title": "a"}, {"id": "p-b", "title": "b"}]}
    campaign = running_campaign(provider="prolific", hits=3)

    with pytest.raises(CrowdConfigError, match="TOPPREF_PROLIFIC_PROJECT_ID"):
        provider(fake_prolific).prepare(campaign=campaign_info(campaign=campaign), stages=[2])
    assert fake_prolific.studies == {}


def test_a_null_balance_is_unknown_not_an_error(fake_prolific):
    fake_prolific.balance_cents = None

    assert provider(fake_prolific).balance_usd() is None


@pytest.mark.django_db
def test_a_null_balance_does_not_stop_publishing(fake_prolific):
    fake_prolific.balance_cents = None
    campaign = running_campaign(provider="prolific", hits=3)

    report = campaign_publish(campaign=campaign)

    assert report.hit_numbers == [1, 2, 3] and report.balance_usd is None


def test_the_fee_is_the_cost_calculators_with_vat(fake_prolific):
    client = provider(fake_prolific, fee_rate=Decimal("0.10"))

    # $1.50 reward: 33.33% fee = 50 cents, plus 20% VAT on it = 10 cents (the configured 10% is not used).
    assert client.fee_usd(reward_usd=Decimal("1.50")) == Decimal("0.60")
    assert client.fee_usd(reward_usd=Decimal("1.50")) == Decimal("0.60")
    assert len(fake_prolific.calls_of("POST", "/api/v1/study-cost-calculator/")) == 1  # asked once


@pytest.mark.parametrize(("estimate", "minimum"), [(1, 6), (10, 29), (30, 73)])
def test_prolifics_minimum_time_limit(estimate, minimum):
    assert minimum_allowed_minutes(estimate) == minimum


@pytest.mark.django_db
def test_a_short_assignment_duration_never_sets_a_time_limit_under_prolifics_minimum(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    Campaign.objects.filter(pk=campaign.pk).update(assignment_duration=timedelta(minutes=10))

    campaign_publish(campaign=campaign)

    (study,) = fake_prolific.studies.values()
    assert study["estimated_completion_time"] == 10 and study["maximum_allowed_time"] == 29


@pytest.mark.parametrize("links", [True, False])
def test_every_submission_is_collected_without_asking_past_the_last_page(fake_prolific, links):
    fake_prolific.links = links  # live responses carry _links and meta; the spec documents only results
    for index in range(5):
        fake_prolific.submit("study-x", f"{index:024x}")

    work = provider(fake_prolific).collect(campaign=_info(), hit_external_ids=["study-x"])

    assert len(work) == 5 and len({item.external_id for item in work}) == 5
    pages = [path for method, path, body in fake_prolific.calls if path == "/api/v1/submissions/"]
    assert len(pages) == 3  # 2 + 2 + 1: never a request past the end


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("SCREENED OUT", WorkStatus.RETURNED),
        ("SCREENED_OUT", WorkStatus.RETURNED),
        ("UNKNOWN", WorkStatus.OTHER),
    ],
)
def test_screened_out_and_unknown_submissions_are_mapped(fake_prolific, status, expected):
    fake_prolific.submit("study-x", "a" * 24, status=status)

    (work,) = provider(fake_prolific).collect(campaign=_info(), hit_external_ids=["study-x"])

    assert work.status == expected and work.provider_status == status.replace("_", " ")


@pytest.mark.django_db
def test_a_screened_out_participant_gives_the_hit_back(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    campaign.refresh_from_db()
    (study,) = campaign.provider_state["studies"].values()
    hit = Hit.objects.get(campaign=campaign, number=1)
    assignment = assignment_start(
        hit=hit, worker=worker_get_or_create(provider="prolific", external_id="f" * 24)
    )
    session = fake_prolific.submit(study, "f" * 24, status="SCREENED OUT")
    Assignment.objects.filter(pk=assignment.pk).update(external_id=session)

    report = campaign_sync(campaign=campaign)

    assignment.refresh_from_db()
    assert report.returned == 1 and assignment.status == Assignment.Status.EXPIRED


def _info() -> CampaignInfo:
    return CampaignInfo(
        public_id="p",
        name="n",
        title="t",
        description="d",
        reward_usd=Decimal("1.00"),
        assignment_duration_seconds=3600,
        lifetime_seconds=86400,
        entry_url="https://toppref.example.org/hits/campaign/p/",
    )
