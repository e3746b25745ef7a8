"""MTurk requests checked against the real service model with botocore's Stubber: HIT type fields, the
paper's qualification requirements and the exclusion qualification, the ExternalQuestion XML, one assignment
per HIT with UniqueRequestToken = the HIT's uuid, HitAlreadyExists read as success, two pages of assignments."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.stub import ANY, Stubber

from judging.crowd import CampaignInfo, Work, WorkStatus
from judging.crowd.mturk import MTurkProvider
from judging.models import Assignment, Hit, HitSlot, Worker
from judging.services import assignment_start_external, assignment_submit, worker_get_or_create
from judging.services.crowd_sync import campaign_sync
from judging.services.publishing import campaign_publish
from tests.judging.crowd.conftest import PUBLIC_URL, complete_hit, running_campaign

HIT_TYPE_ID = "3HITTYPEAAAAAAAAAAAAAAAAAAAAAA"
QUALIFICATION_ID = "3QUALIFICATIONAAAAAAAAAAAAAAA"
EXPECTED_REQUIREMENTS = [
    {
        "QualificationTypeId": "00000000000000000071",
        "Comparator": "EqualTo",
        "LocaleValues": [{"Country": "US"}],
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    },
    {
        "QualificationTypeId": "00000000000000000040",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [1000],
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    },
    {
        "QualificationTypeId": "000000000000000000L0",
        "Comparator": "GreaterThan",
        "IntegerValues": [95],
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    },
    {
        "QualificationTypeId": QUALIFICATION_ID,
        "Comparator": "DoesNotExist",
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    },
]


def mturk_id(prefix: str, number: int) -> str:
    return f"{prefix}{number:0{30 - len(prefix)}d}"


@pytest.fixture
def stubbed():
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com",
        aws_access_key_id="AKIDTOPPREFTEST",
        aws_secret_access_key="not-a-secret",
    )
    with Stubber(client) as stubber:
        yield MTurkProvider(client=client, frame_height=800), stubber
        stubber.assert_no_pending_responses()


def stub_setup(stubber, campaign):
    stubber.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    stubber.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": QUALIFICATION_ID, "Name": "x"}},
        {
            "Name": f"toppref excluded {campaign.public_id}",
            "Description": f"Workers excluded from toppref campaign {campaign.name}",
            "QualificationTypeStatus": "Active",
        },
    )
    stubber.add_response(
        "create_hit_type",
        {"HITTypeId": HIT_TYPE_ID},
        {
            "Title": f"Which passage answers the question better? ({campaign.name})",
            "Description": ANY,
            "Keywords": "relevance, preference, search, comparison",
            "Reward": "2.00",
            "AssignmentDurationInSeconds": 1800,  # the default assignment_duration: 30 minutes
            "AutoApprovalDelayInSeconds": 7 * 24 * 3600,
            "QualificationRequirements": EXPECTED_REQUIREMENTS,
        },
    )


def expected_question(hit: Hit) -> str:
    return (
        '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
        '2006-07-14/ExternalQuestion.xsd">'
        f"<ExternalURL>{PUBLIC_URL}/hits/{hit.public_id}/</ExternalURL>"
        "<FrameHeight>800</FrameHeight></ExternalQuestion>"
    )


def create_hit_params(hit: Hit) -> dict:
    return {
        "HITTypeId": HIT_TYPE_ID,
        "MaxAssignments": 1,
        "LifetimeInSeconds": 24 * 3600,
        "Question": expected_question(hit),
        "RequesterAnnotation": str(hit.public_id),
        "UniqueRequestToken": str(hit.public_id),
    }


@pytest.mark.django_db
def test_publish_creates_the_hit_type_and_one_hit_per_hit_with_its_uuid_as_token(stubbed):
    provider, stubber = stubbed
    campaign = running_campaign(hits=3)
    hits = list(Hit.objects.filter(campaign=campaign).order_by("number"))
    stub_setup(stubber, campaign)
    expiration = datetime(2030, 1, 2, tzinfo=UTC)
    for number, hit in enumerate(hits, start=1):
        stubber.add_response(
            "create_hit_with_hit_type",
            {"HIT": {"HITId": mturk_id("HIT", number), "Expiration": expiration}},
            create_hit_params(hit),
        )

    report = campaign_publish(campaign=campaign, provider=provider)

    assert report.hit_numbers == [1, 2, 3] and report.note == ""
    assert report.total_usd == Decimal("7.20") and report.balance_usd == Decimal("10000.00")
    rows = list(
        Hit.objects.filter(campaign=campaign)
        .order_by("number")
        .values_list("external_id", "reward_usd", "fee_usd", "provider", "expires_at")
    )
    assert rows == [
        (mturk_id("HIT", n), Decimal("2.00"), Decimal("0.40"), "mturk", expiration) for n in (1, 2, 3)
    ]
    campaign.refresh_from_db()
    assert campaign.provider_state["hit_type_id"] == HIT_TYPE_ID
    assert campaign.provider_state["qualification_type_id"] == QUALIFICATION_ID
    assert campaign.provider_state["environment"] == "sandbox"


@pytest.mark.django_db
def test_a_replayed_token_is_read_as_success_with_the_hit_id_from_the_message_or_the_annotation(stubbed):
    provider, stubber = stubbed
    campaign = running_campaign(hits=3)
    first, second, third = Hit.objects.filter(campaign=campaign).order_by("number")
    stub_setup(stubber, campaign)
    stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message=f'The HIT with ID "{mturk_id("HIT", 1)}" already exists. (1700000000000)',
        http_status_code=400,
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        expected_params=create_hit_params(first),
    )
    stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message="The HIT already exists.",
        http_status_code=400,
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        expected_params=create_hit_params(second),
    )
    stubber.add_response(
        "list_hits",
        {"HITs": [{"HITId": mturk_id("HIT", 9), "RequesterAnnotation": "someone else"}], "NextToken": "p2"},
        {"MaxResults": 100},
    )
    stubber.add_response(
        "list_hits",
        {"HITs": [{"HITId": mturk_id("HIT", 2), "RequesterAnnotation": str(second.public_id)}]},
        {"MaxResults": 100, "NextToken": "p2"},
    )
    stubber.add_response(
        "create_hit_with_hit_type", {"HIT": {"HITId": mturk_id("HIT", 3)}}, create_hit_params(third)
    )

    campaign_publish(campaign=campaign, provider=provider)

    assert list(
        Hit.objects.filter(campaign=campaign).order_by("number").values_list("external_id", flat=True)
    ) == [
        mturk_id("HIT", 1),
        mturk_id("HIT", 2),
        mturk_id("HIT", 3),
    ]


@pytest.mark.django_db
def test_sync_reads_two_pages_of_assignments_approves_stored_work_and_excludes_failed_workers(stubbed):
    provider, stubber = stubbed
    campaign = running_campaign(hits=3)
    campaign.provider_state = {
        "environment": "sandbox",
        "hit_type_id": HIT_TYPE_ID,
        "qualification_type_id": QUALIFICATION_ID,
    }
    campaign.save(update_fields=["provider_state"])
    hits = list(Hit.objects.filter(campaign=campaign).order_by("number"))
    for number, hit in enumerate(hits, start=1):
        Hit.objects.filter(pk=hit.pk).update(
            external_id=mturk_id("HIT", number),
            published_at=datetime.now(UTC),
            reward_usd=Decimal("2.00"),
            fee_usd=Decimal("0.40"),
        )
    # Workers A1 and A2 finish HITs 1 and 2 on the HIT page; A2 fails the challenges (paid, excluded).
    # Nobody opened HIT 3: it is not listed.
    complete_hit(hits[0], "A1WORKER")
    complete_hit(hits[1], "A2WORKER", fail_challenges=True)
    submitted = datetime.now(UTC) - timedelta(minutes=5)

    def assignment(number, worker, hit_number):
        return {
            "AssignmentId": mturk_id("ASG", number),
            "WorkerId": worker,
            "HITId": mturk_id("HIT", hit_number),
            "AssignmentStatus": "Submitted",
            "SubmitTime": submitted,
        }

    statuses = ["Submitted", "Approved", "Rejected"]
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment(1, "A1WORKER", 1)], "NextToken": "page-2", "NumResults": 1},
        {"HITId": mturk_id("HIT", 1), "AssignmentStatuses": statuses, "MaxResults": 100},
    )
    # A second page with an assignment our pages never saw (no stored answers): recorded, not approved.
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment(4, "A9STRANGER", 1)], "NumResults": 1},
        {
            "HITId": mturk_id("HIT", 1),
            "AssignmentStatuses": statuses,
            "MaxResults": 100,
            "NextToken": "page-2",
        },
    )
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment(2, "A2WORKER", 2)], "NumResults": 1},
        {"HITId": mturk_id("HIT", 2), "AssignmentStatuses": statuses, "MaxResults": 100},
    )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("ASG", 1)})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("ASG", 2)})
    stubber.add_response(
        "associate_qualification_with_worker",
        {},
        {
            "QualificationTypeId": QUALIFICATION_ID,
            "WorkerId": "A2WORKER",
            "IntegerValue": 1,
            "SendNotification": False,
        },
    )

    report = campaign_sync(campaign=campaign, provider=provider)

    assert (report.collected, report.approved, report.paid, report.unmatched, report.excluded) == (
        3,
        2,
        2,
        1,
        1,
    )
    rows = sorted(
        Assignment.objects.filter(campaign=campaign).values_list(
            "worker__external_id", "external_id", "status", "paid_usd"
        )
    )
    assert rows == [
        ("A1WORKER", mturk_id("ASG", 1), "accepted", Decimal("2.00")),
        ("A2WORKER", mturk_id("ASG", 2), "discarded", Decimal("2.00")),
    ]
    assert Worker.objects.filter(provider="mturk", external_id="A9STRANGER").exists()
    campaign.refresh_from_db()
    assert campaign.provider_state["excluded_workers"] == ["A2WORKER"]


def test_a_bonus_carries_its_token_and_an_approved_assignment_is_not_approved_again(stubbed):
    provider, stubber = stubbed
    info = CampaignInfo(
        public_id="c",
        name="c",
        title="t",
        description="d",
        reward_usd=Decimal("2.00"),
        assignment_duration_seconds=3600,
        lifetime_seconds=86400,
        entry_url="https://x/",
    )
    work = Work(
        external_id=mturk_id("ASG", 1),
        worker_id="A1WORKER",
        status=WorkStatus.SUBMITTED,
        provider_status="Submitted",
        hit_external_id=mturk_id("HIT", 1),
    )
    stubber.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": "A1WORKER",
            "BonusAmount": "0.50",
            "AssignmentId": mturk_id("ASG", 1),
            "Reason": "all challenges right",
            "UniqueRequestToken": "bonus-1",
        },
    )
    # Approving an assignment MTurk auto-approved meanwhile fails; its state says it is approved: success.
    stubber.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted",
        expected_params={"AssignmentId": mturk_id("ASG", 1)},
    )
    stubber.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": mturk_id("ASG", 1), "AssignmentStatus": "Approved"}},
        {"AssignmentId": mturk_id("ASG", 1)},
    )

    provider.pay_bonus(
        campaign=info, work=work, amount_usd=Decimal("0.5"), reason="all challenges right", token="bonus-1"
    )

    assert provider.approve(campaign=info, work=work) is True


@pytest.mark.django_db
def test_only_the_assignment_mturk_lists_for_that_hit_and_worker_is_confirmed(stubbed):
    provider, stubber = stubbed
    campaign = running_campaign(hits=3)
    campaign.provider_state = {
        "environment": "sandbox",
        "hit_type_id": HIT_TYPE_ID,
        "qualification_type_id": QUALIFICATION_ID,
    }
    campaign.save(update_fields=["provider_state"])
    hits = list(Hit.objects.filter(campaign=campaign).order_by("number"))
    for number, hit in enumerate(hits, start=1):
        Hit.objects.filter(pk=hit.pk).update(
            external_id=mturk_id("HIT", number), published_at=datetime.now(UTC), reward_usd=Decimal("2.00")
        )

    def claim_and_answer(hit, worker_id, assignment_id):
        worker = worker_get_or_create(provider="mturk", external_id=worker_id)
        assignment = assignment_start_external(hit=hit, worker=worker, external_id=assignment_id)
        slots = HitSlot.objects.filter(hit=hit)
        return assignment_submit(
            assignment=assignment,
            winners={slot.position: slot.expected_winner_id or slot.left_id for slot in slots},
        )

    forged = claim_and_answer(hits[0], "AFORGED1", "FORGEDASSIGN1")  # an id MTurk never issued
    real = claim_and_answer(hits[0], "A1WORKER", mturk_id("ASG", 1))
    # MTurk's assignment 2 on HIT 2 belongs to A2WORKER: a claim of that id by another worker is not it.
    impostor = claim_and_answer(hits[1], "AIMPOSTOR1", mturk_id("ASG", 2))
    statuses = ["Submitted", "Approved", "Rejected"]
    for number, worker in ((1, "A1WORKER"), (2, "A2WORKER")):
        stubber.add_response(
            "list_assignments_for_hit",
            {
                "Assignments": [
                    {
                        "AssignmentId": mturk_id("ASG", number),
                        "WorkerId": worker,
                        "HITId": mturk_id("HIT", number),
                        "AssignmentStatus": "Submitted",
                    }
                ],
                "NumResults": 1,
            },
            {"HITId": mturk_id("HIT", number), "AssignmentStatuses": statuses, "MaxResults": 100},
        )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("ASG", 1)})

    report = campaign_sync(campaign=campaign, provider=provider)

    states = {
        a.pk: (a.status, a.confirmed_at is not None, a.paid_usd)
        for a in Assignment.objects.filter(pk__in=[forged.pk, real.pk, impostor.pk])
    }
    assert states == {
        forged.pk: ("submitted", False, None),
        real.pk: ("accepted", True, Decimal("2.00")),
        impostor.pk: ("submitted", False, None),
    }
    assert (report.confirmed, report.approved, report.unmatched) == (1, 1, 1)
    assert Hit.objects.get(pk=hits[0].pk).status == Hit.Status.ACCEPTED
    assert Hit.objects.get(pk=hits[1].pk).status == Hit.Status.OPEN
