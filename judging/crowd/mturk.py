"""Amazon Mechanical Turk through boto3 (the requester API, 2017-01-17).

One HIT type per campaign carrying the paper's worker requirements ("Assessing top-k preferences",
section 4.3: US locale, at least 1,000 approved HITs, approval rate above 95%) and the campaign's exclusion
qualification (``DoesNotExist``); one assignment per HIT, created with ``CreateHITWithHITType`` and
``UniqueRequestToken`` = the HIT's uuid, so a call retried after a timeout never creates a second HIT.
Throttling, 5xx and timeouts are retried by botocore's adaptive mode; what survives it is raised as
``CrowdTransientError`` for the Celery task to retry. Every call is logged with its request id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from xml.etree import ElementTree

from botocore.exceptions import BotoCoreError, ClientError

from judging.crowd.base import (
    CampaignInfo,
    CrowdConfigError,
    CrowdError,
    CrowdRequestError,
    CrowdTransientError,
    HitInfo,
    Published,
    Work,
    WorkStatus,
    to_cents,
)

logger = logging.getLogger(__name__)

ENDPOINTS = {
    "sandbox": "https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    "production": "https://mturk-requester.us-east-1.amazonaws.com",
}
EXTERNAL_QUESTION_XMLNS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# System qualification types (MTurk QualificationRequirement data structure).
LOCALE = "00000000000000000071"
NUMBER_HITS_APPROVED = "00000000000000000040"
PERCENT_ASSIGNMENTS_APPROVED = "000000000000000000L0"
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
# A HIT id in MTurk's "already exists" message: 30 upper-case letters and digits.
HIT_ID_IN_MESSAGE = re.compile(r"\b([A-Z0-9]{30})\b")
# Expire now: UpdateExpirationForHIT only shortens to "now" when given a time in the past.
PAST = datetime(2015, 1, 1, tzinfo=UTC)
AUTO_APPROVAL_DELAY_SECONDS = 7 * 24 * 3600
STATUS = {"Submitted": WorkStatus.SUBMITTED, "Approved": WorkStatus.APPROVED, "Rejected": WorkStatus.REJECTED}
TRANSIENT_CODES = {"ServiceFault", "ThrottlingException", "Throttling", "ServiceUnavailable", "InternalError"}


def external_question(url: str, *, frame_height: int) -> str:
    """The ExternalQuestion XML for ``url`` (escaped by ElementTree, never formatted by hand)."""
    root = ElementTree.Element("ExternalQuestion", xmlns=EXTERNAL_QUESTION_XMLNS)
    ElementTree.SubElement(root, "ExternalURL").text = url
    ElementTree.SubElement(root, "FrameHeight").text = str(frame_height)
    return ElementTree.tostring(root, encoding="unicode")


def qualification_requirements(exclusion_qualification_id: str) -> list[dict[str, Any]]:
    """The paper's requirements plus the campaign's exclusion list, guarding discovery, preview and accept."""
    return [
        {
            "QualificationTypeId": LOCALE,
            "Comparator": "EqualTo",
            "LocaleValues": [{"Country": "US"}],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": NUMBER_HITS_APPROVED,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [1000],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": PERCENT_ASSIGNMENTS_APPROVED,
            "Comparator": "GreaterThan",
            "IntegerValues": [95],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": exclusion_qualification_id,
            "Comparator": "DoesNotExist",
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
    ]


def mturk_fee_usd(
    reward_usd: Decimal, *, assignments: int = 1, rate: Decimal, ten_plus_rate: Decimal
) -> Decimal:
    """MTurk's commission on one HIT: ``rate`` of the rewards, plus ``ten_plus_rate`` for HITs with 10 or
    more assignments (we publish one assignment per HIT)."""
    total_rate = rate + (ten_plus_rate if assignments >= 10 else Decimal("0"))
    return to_cents(Decimal(reward_usd) * assignments * total_rate)


class MTurkProvider:
    name = "mturk"
    reserves_on_publish = False
    expires_each_hit = True

    def __init__(
        self,
        *,
        client: Any = None,
        environment: str = "sandbox",
        endpoint_url: str = "",
        frame_height: int = 800,
        fee_rate: Decimal = Decimal("0.20"),
        ten_plus_fee_rate: Decimal = Decimal("0.20"),
        timeout_seconds: float = 30,
        max_attempts: int = 8,
    ) -> None:
        if environment not in ENDPOINTS:
            raise CrowdConfigError(
                f"TOPPREF_MTURK_ENV must be 'sandbox' or 'production', not {environment!r}"
            )
        self.environment = environment
        self.frame_height = frame_height
        self.fee_rate, self.ten_plus_fee_rate = Decimal(fee_rate), Decimal(ten_plus_fee_rate)
        self.client = client or self._client(
            endpoint_url or ENDPOINTS[environment], timeout_seconds=timeout_seconds, max_attempts=max_attempts
        )

    @staticmethod
    def _client(endpoint_url: str, *, timeout_seconds: float, max_attempts: int) -> Any:
        import boto3
        from botocore.config import Config

        session = boto3.Session()
        # Credentials come from the environment or an AWS profile; checked here, at publish time.
        if session.get_credentials() is None:
            raise CrowdConfigError(
                "MTurk needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
            )
        config = Config(
            retries={"mode": "adaptive", "max_attempts": max_attempts},
            connect_timeout=timeout_seconds,
            read_timeout=timeout_seconds,
        )
        return session.client("mturk", region_name="us-east-1", endpoint_url=endpoint_url, config=config)

    # -- one place for every call: logging with the request id, errors sorted into transient or final --

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        try:
            response = getattr(self.client, operation)(**params)
        except ClientError as error:
            meta = error.response.get("ResponseMetadata", {})
            code = error.response.get("Error", {}).get("Code", "")
            logger.warning(
                "mturk %s failed: %s %s (request id %s, %s retries)",
                operation,
                code,
                error.response.get("TurkErrorCode", ""),
                meta.get("RequestId", "-"),
                meta.get("RetryAttempts", 0),
            )
            if code in TRANSIENT_CODES or meta.get("HTTPStatusCode", 0) >= 500:
                raise CrowdTransientError(f"mturk {operation}: {error}") from error
            raise CrowdRequestError(
                f"mturk {operation}: {error}",
                code=code,
                detail=error.response.get("TurkErrorCode", "") or "",
                message=error.response.get("Error", {}).get("Message", "") or "",
            ) from error
        except BotoCoreError as error:
            logger.warning("mturk %s failed: %s", operation, error)
            raise CrowdTransientError(f"mturk {operation}: {error}") from error
        meta = response.get("ResponseMetadata", {})
        logger.info(
            "mturk %s ok (request id %s, %s retries)",
            operation,
            meta.get("RequestId", "-"),
            meta.get("RetryAttempts", 0),
        )
        return response

    # -- the provider interface --

    def fee_usd(self, *, reward_usd: Decimal, assignments: int = 1) -> Decimal:
        return mturk_fee_usd(
            reward_usd, assignments=assignments, rate=self.fee_rate, ten_plus_rate=self.ten_plus_fee_rate
        )

    def balance_usd(self) -> Decimal | None:
        return Decimal(self._call("get_account_balance")["AvailableBalance"])

    def prepare(self, *, campaign: CampaignInfo, stages: Sequence[int] = ()) -> dict[str, Any]:
        state = dict(campaign.state)
        if state.get("environment", self.environment) != self.environment:
            raise CrowdConfigError(
                f"campaign {campaign.name!r} was published to the MTurk {state['environment']}, "
                f"not to the {self.environment}: its HITs cannot be mixed"
            )
        state["environment"] = self.environment
        if not state.get("qualification_type_id"):
            state["qualification_type_id"] = self._exclusion_qualification(campaign)
        if not state.get("hit_type_id"):
            # CreateHITType is idempotent by value: the same values give back the same HIT type id.
            state["hit_type_id"] = self._call(
                "create_hit_type",
                Title=campaign.title[:128],
                Description=campaign.description[:2000],
                Keywords="relevance, preference, search, comparison",
                Reward=str(to_cents(campaign.reward_usd)),
                AssignmentDurationInSeconds=campaign.assignment_duration_seconds,
                AutoApprovalDelayInSeconds=AUTO_APPROVAL_DELAY_SECONDS,
                QualificationRequirements=qualification_requirements(state["qualification_type_id"]),
            )["HITTypeId"]
        return state

    def _exclusion_qualification(self, campaign: CampaignInfo) -> str:
        """Find or create the campaign's exclusion qualification (names are unique per requester)."""
        name = f"toppref excluded {campaign.public_id}"
        try:
            return self._call(
                "create_qualification_type",
                Name=name,
                Description=f"Workers excluded from toppref campaign {campaign.name}",
                QualificationTypeStatus="Active",
            )["QualificationType"]["QualificationTypeId"]
        except CrowdRequestError as error:
            if "already created" not in error.message:
                raise
        for page in self.client.get_paginator("list_qualification_types").paginate(
            Query=name, MustBeRequestable=False, MustBeOwnedByCaller=True
        ):
            logger.info("mturk ListQualificationTypes ok (request id %s)", _request_id(page))
            for qualification in page.get("QualificationTypes", []):
                if qualification["Name"] == name:
                    return qualification["QualificationTypeId"]
        raise CrowdError(f"mturk: qualification {name!r} exists but cannot be found")

    def publish(self, *, campaign: CampaignInfo, hits: Sequence[HitInfo]) -> Iterator[Published]:
        hit_type_id = campaign.state["hit_type_id"]
        for hit in hits:
            try:
                created = self._call(
                    "create_hit_with_hit_type",
                    HITTypeId=hit_type_id,
                    MaxAssignments=1,
                    LifetimeInSeconds=campaign.lifetime_seconds,
                    Question=external_question(hit.page_url, frame_height=self.frame_height),
                    RequesterAnnotation=hit.public_id,
                    UniqueRequestToken=hit.public_id,
                )["HIT"]
                yield Published(hit.public_id, created["HITId"], created.get("Expiration"))
            except CrowdRequestError as error:
                if error.detail != HIT_ALREADY_EXISTS:
                    raise CrowdRequestError(
                        f"HIT {hit.number}: {error}",
                        code=error.code,
                        detail=error.detail,
                        message=error.message,
                    ) from error
                # Our token was seen before (a retry after a timeout): the HIT exists, find its id.
                found = HIT_ID_IN_MESSAGE.search(error.message)
                hit_id = found.group(1) if found else self._find_hit(hit.public_id)
                logger.info("mturk HIT %s for %s existed already (token replayed)", hit_id, hit.public_id)
                yield Published(hit.public_id, hit_id)

    def _find_hit(self, public_id: str) -> str:
        for page in self.client.get_paginator("list_hits").paginate(PaginationConfig={"PageSize": 100}):
            logger.info("mturk ListHITs ok (request id %s)", _request_id(page))
            for hit in page.get("HITs", []):
                if hit.get("RequesterAnnotation") == public_id:
                    return hit["HITId"]
        raise CrowdError(f"mturk: no HIT carries the annotation {public_id}")

    def collect(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> list[Work]:
        work: list[Work] = []
        paginator = self.client.get_paginator("list_assignments_for_hit")
        for hit_id in hit_external_ids:
            pages = paginator.paginate(
                HITId=hit_id,
                AssignmentStatuses=["Submitted", "Approved", "Rejected"],
                PaginationConfig={"PageSize": 100},
            )
            try:
                for page in pages:
                    logger.info(
                        "mturk ListAssignmentsForHIT %s ok (request id %s)", hit_id, _request_id(page)
                    )
                    for assignment in page.get("Assignments", []):
                        work.append(
                            Work(
                                external_id=assignment["AssignmentId"],
                                worker_id=assignment["WorkerId"],
                                status=STATUS.get(assignment["AssignmentStatus"], WorkStatus.OTHER),
                                provider_status=assignment["AssignmentStatus"],
                                hit_external_id=hit_id,
                                submitted_at=assignment.get("SubmitTime"),
                            )
                        )
            except (ClientError, BotoCoreError) as error:
                raise CrowdTransientError(f"mturk ListAssignmentsForHIT {hit_id}: {error}") from error
        return work

    def approve(self, *, campaign: CampaignInfo, work: Work) -> bool:
        if work.status == WorkStatus.APPROVED:
            return True
        try:
            self._call("approve_assignment", AssignmentId=work.external_id)
            return True
        except CrowdRequestError:
            # Approving an auto-approved (or already approved) assignment is an error: read the state.
            status = self._call("get_assignment", AssignmentId=work.external_id)["Assignment"][
                "AssignmentStatus"
            ]
            return status == "Approved"

    def refuse(self, *, campaign: CampaignInfo, work: Work, reason: str) -> bool:
        self._call("reject_assignment", AssignmentId=work.external_id, RequesterFeedback=reason[:1024])
        return True

    def pay_bonus(
        self, *, campaign: CampaignInfo, work: Work, amount_usd: Decimal, reason: str, token: str
    ) -> None:
        self._call(
            "send_bonus",
            WorkerId=work.worker_id,
            BonusAmount=str(to_cents(amount_usd)),
            AssignmentId=work.external_id,
            Reason=reason,
            UniqueRequestToken=token[:64],
        )

    def exclude(self, *, campaign: CampaignInfo, worker_ids: Sequence[str]) -> dict[str, Any]:
        """Grant the campaign's exclusion qualification with ``AssociateQualificationWithWorker`` (its HIT type
        requires ``DoesNotExist``); never a ``CreateWorkerBlock``, which is for spam and hurts the worker's
        standing on MTurk."""
        state = dict(campaign.state)
        done = list(state.get("excluded_workers", []))
        for worker_id in worker_ids:
            if worker_id in done:
                continue
            try:
                self._call(
                    "associate_qualification_with_worker",
                    QualificationTypeId=state["qualification_type_id"],
                    WorkerId=worker_id,
                    IntegerValue=1,
                    SendNotification=False,
                )
            except CrowdRequestError as error:
                # A refusal is final (e.g. a worker who never worked for us): our own check at accept time
                # still keeps them out, so note it and go on rather than fail every later sync.
                logger.warning("mturk: worker %s not excluded at MTurk: %s", worker_id, error)
            done.append(worker_id)
        state["excluded_workers"] = done
        return state

    def expire(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> None:
        for hit_id in hit_external_ids:
            self._call("update_expiration_for_hit", HITId=hit_id, ExpireAt=PAST)


def _request_id(response: dict[str, Any]) -> str:
    return response.get("ResponseMetadata", {}).get("RequestId", "-")
