"""Prolific through its researcher REST API (v1) with httpx.

One study per campaign stage, pointing at the campaign's entry page with Prolific's placeholders; its places
are the HITs published to it (places can only grow once a study is published, so a retried publish sets the
total to what the database says rather than adding). Participants finish with a completion code the server
reveals only after storing and checking their answers; the code's action is MANUALLY_REVIEW, so a leaked code
only moves a submission to review and we approve the submissions whose answers we hold. Failed workers go to
the campaign's participant group, which every study of the campaign uses as a block list.

Calls marked UNVERIFIED below are not confirmed in Prolific's own documentation; each lives in one method.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import httpx

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

DEFAULT_API_URL = "https://api.prolific.com/api/v1/"
STATUS = {
    "ACTIVE": WorkStatus.ACTIVE,
    "RESERVED": WorkStatus.ACTIVE,
    "PROCESSING": WorkStatus.ACTIVE,
    "AWAITING REVIEW": WorkStatus.SUBMITTED,
    "APPROVED": WorkStatus.APPROVED,
    "PARTIALLY APPROVED": WorkStatus.APPROVED,
    "REJECTED": WorkStatus.REJECTED,
    "RETURNED": WorkStatus.RETURNED,
    "TIMED-OUT": WorkStatus.RETURNED,
    # Screened out by the study's own screening: the participant's work ended here, their place is freed.
    "SCREENED OUT": WorkStatus.RETURNED,
    # Prolific's catch-all: nothing to act on until it says more.
    "UNKNOWN": WorkStatus.OTHER,
}
RETRY_STATUSES = {429, 500, 502, 503, 504}
PLACEHOLDERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
REJECTION_MESSAGE = (
    "Your submission did not contain the answers our server expects for this study, so we cannot accept it. "
    "Please contact us through Prolific if you believe this is a mistake."
)


def prolific_fee_usd(reward_usd: Decimal, *, assignments: int = 1, rate: Decimal) -> Decimal:
    """Prolific's service fee on the rewards of one HIT (a rate of the reward; VAT where it applies is not
    included: see docs/decisions.md)."""
    return to_cents(Decimal(reward_usd) * assignments * rate)


def study_key(stage: int) -> str:
    return f"stage-{stage}"


def minimum_allowed_minutes(estimated_minutes: int) -> int:
    """Prolific's documented floor for ``maximum_allowed_time``: 2 + 2*est + 2*sqrt(est) minutes for an
    ``estimated_completion_time`` of est minutes, rounded up."""
    return math.ceil(2 + 2 * estimated_minutes + 2 * math.sqrt(estimated_minutes))


class ProlificProvider:
    name = "prolific"
    reserves_on_publish = True
    expires_each_hit = False

    def __init__(
        self,
        *,
        token: str,
        api_url: str = DEFAULT_API_URL,
        workspace_id: str = "",
        project_id: str = "",
        fee_rate: Decimal = Decimal("0.428"),
        estimated_minutes: int = 10,
        timeout_seconds: float = 30,
        attempts: int = 4,
        backoff_seconds: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not token:
            raise CrowdConfigError("Prolific needs an API token: set PROLIFIC_API_TOKEN")
        self.fee_rate = Decimal(fee_rate)
        self.workspace_id = workspace_id
        self.project_id = project_id
        self._fees: dict[tuple[Decimal, int], Decimal] = {}
        self.estimated_minutes = estimated_minutes
        self.attempts, self.backoff_seconds = attempts, backoff_seconds
        self.http = httpx.Client(
            base_url=api_url.rstrip("/") + "/",
            headers={"Authorization": f"Token {token}"},
            timeout=timeout_seconds,
            transport=transport,
        )

    # -- one place for every call: logging, retries of throttling, 5xx and timeouts, error shape --

    def _request(self, method: str, path: str, *, retry: bool = True, **kwargs: Any) -> httpx.Response:
        attempts = self.attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as error:
                logger.warning("prolific %s %s failed (attempt %d): %s", method, path, attempt, error)
                if attempt == attempts:
                    raise CrowdTransientError(f"prolific {method} {path}: {error}") from error
            else:
                logger.info(
                    "prolific %s %s -> %s (request id %s, attempt %d)",
                    method,
                    path,
                    response.status_code,
                    response.headers.get("x-request-id", "-"),
                    attempt,
                )
                if response.status_code not in RETRY_STATUSES:
                    return response
                if attempt == attempts:
                    raise CrowdTransientError(f"prolific {method} {path}: HTTP {response.status_code}")
            time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        if response.status_code >= 400:
            raise CrowdRequestError(
                f"prolific {method} {path}: HTTP {response.status_code} {_error_text(response)}",
                code=str(response.status_code),
                message=_error_text(response),
            )
        return response.json() if response.content else {}

    # -- the provider interface --

    def fee_usd(self, *, reward_usd: Decimal, assignments: int = 1) -> Decimal:
        """The account's own fee and VAT on these rewards, from Prolific's study cost calculator
        (``POST /study-cost-calculator/``: ``total_cost`` in cents, rewards included); the configured rate
        (TOPPREF_PROLIFIC_FEE_RATE) only when the calculator cannot be reached, logged."""
        key = (to_cents(reward_usd), assignments)
        if key not in self._fees:
            try:
                total = self._json(
                    "POST",
                    "study-cost-calculator/",
                    json={"reward": int(key[0] * 100), "total_available_places": assignments},
                )["total_cost"]
                self._fees[key] = max(to_cents(Decimal(total) / 100 - key[0] * assignments), Decimal("0"))
            except (CrowdError, KeyError, TypeError, ValueError) as error:
                logger.warning("prolific cost calculator unavailable, fee at the configured rate: %s", error)
                return prolific_fee_usd(reward_usd, assignments=assignments, rate=self.fee_rate)
        return self._fees[key]

    def balance_usd(self) -> Decimal | None:
        """``GET /workspaces/{id}/balance/``: ``available_balance`` in cents of ``currency_code`` (as in
        clients generated from Prolific's OpenAPI; UNVERIFIED against Prolific's own pages). Prolific checks the
        balance itself when a study is published, so an unknown balance only skips our early check."""
        try:
            workspace_id = self._workspace_id()
            response = self._request("GET", f"workspaces/{workspace_id}/balance/")
        except CrowdError as error:
            logger.warning("prolific balance unknown: %s", error)
            return None
        body = response.json() if response.status_code == 200 else {}
        if body.get("available_balance") is None:
            # Prolific documents the balance as nullable: unknown, not zero.
            logger.warning("prolific balance unknown: HTTP %s", response.status_code)
            return None
        currency = body.get("currency_code", "USD")
        if currency != "USD":
            # Rewards are sent in the account's currency: toppref's USD amounts are then that currency's.
            logger.warning(
                "prolific account currency is %s: toppref's amounts are read as %s", currency, currency
            )
        return to_cents(Decimal(body["available_balance"]) / 100)

    def _workspace_id(self) -> str:
        """TOPPREF_PROLIFIC_WORKSPACE_ID; unset, the account's one workspace (``GET /workspaces/``), logged.
        Prolific has no default workspace and lists them in no documented order, so an account with several
        must say which: ``CrowdConfigError`` naming them."""
        if not self.workspace_id:
            self.workspace_id = self._only("workspaces/", "workspace", "TOPPREF_PROLIFIC_WORKSPACE_ID")
        return self.workspace_id

    def _project_id(self) -> str:
        """TOPPREF_PROLIFIC_PROJECT_ID; unset, the workspace's one project
        (``GET /workspaces/{id}/projects/``), logged. A study without ``project`` would land in the account's
        first-created project, which need not belong to the workspace whose balance we read."""
        if not self.project_id:
            self.project_id = self._only(
                f"workspaces/{self._workspace_id()}/projects/", "project", "TOPPREF_PROLIFIC_PROJECT_ID"
            )
        return self.project_id

    def _only(self, path: str, what: str, setting: str) -> str:
        results = self._json("GET", path).get("results", [])
        if len(results) != 1:
            names = ", ".join(f"{row.get('id')} ({row.get('title', '')})" for row in results) or "none"
            raise CrowdConfigError(f"Prolific: set {setting} to one {what} of the account (found: {names})")
        logger.info("prolific: %s not configured, using the only one: %s", what, results[0]["id"])
        return str(results[0]["id"])

    def prepare(self, *, campaign: CampaignInfo, stages: Sequence[int] = ()) -> dict[str, Any]:
        """Completion code, participant group, and a draft study for each stage that has none yet."""
        state = dict(campaign.state)
        state.setdefault("studies", {})
        if not state.get("completion_code"):
            # Secret, random, and shown to a participant only after the server checked their answers.
            state["completion_code"] = secrets.token_hex(6).upper()
        if not state.get("participant_group_id"):
            state["participant_group_id"] = self._json(
                "POST",
                "participant-groups/",
                json={
                    "workspace_id": self._workspace_id(),
                    "name": f"toppref excluded {campaign.public_id}",
                    "description": f"Participants excluded from toppref campaign {campaign.name}",
                },
                retry=False,
            )["id"]
        for stage in sorted(set(stages)):
            state = self._study_create(campaign=campaign, state=state, stage=stage)
        return state

    def _study_create(self, *, campaign: CampaignInfo, state: dict[str, Any], stage: int) -> dict[str, Any]:
        """Create the draft study of one stage (a draft costs nothing); the caller stores the new state
        before publishing, so a retry finds the draft instead of making another."""
        studies = dict(state.get("studies", {}))
        if study_key(stage) in studies:
            return state
        study = self._json(
            "POST",
            "studies/",
            retry=False,
            json={
                "name": campaign.title if stage == 1 else f"{campaign.title} (stage {stage})",
                "internal_name": f"toppref {campaign.name} {study_key(stage)} {campaign.public_id}",
                "description": campaign.description,
                "external_study_url": f"{campaign.entry_url}?{PLACEHOLDERS}",
                "prolific_id_option": "url_parameters",
                "completion_codes": [
                    {
                        "code": state["completion_code"],
                        "code_type": "COMPLETED",
                        "actor": "participant",
                        "actions": [{"action": "MANUALLY_REVIEW"}],
                    }
                ],
                "project": self._project_id(),
                "total_available_places": 1,
                "estimated_completion_time": self.estimated_minutes,
                "maximum_allowed_time": max(
                    campaign.assignment_duration_seconds // 60,
                    minimum_allowed_minutes(self.estimated_minutes),
                ),
                "reward": int(to_cents(campaign.reward_usd) * 100),
                "device_compatibility": ["desktop"],
                # UNVERIFIED filter id: a participant group used as a block list (see docs/decisions.md).
                "filters": [
                    {
                        "filter_id": "participant_group_blocklist",
                        "selected_values": [state["participant_group_id"]],
                    }
                ],
                "metadata": campaign.public_id,
            },
        )
        studies[study_key(stage)] = study["id"]
        return {**state, "studies": studies}

    def publish(self, *, campaign: CampaignInfo, hits: Sequence[HitInfo]) -> Iterator[Published]:
        by_stage: dict[int, list[HitInfo]] = defaultdict(list)
        for hit in hits:
            by_stage[hit.stage].append(hit)
        for stage, stage_hits in sorted(by_stage.items()):
            study_id = campaign.state["studies"][study_key(stage)]
            # Places = HITs published to this study (as recorded) + these: a retry sets the same total.
            target = campaign.published_hits.get(study_id, 0) + len(stage_hits)
            study = self._json("GET", f"studies/{study_id}/")
            if study.get("total_available_places", 0) < target:
                self._json("PATCH", f"studies/{study_id}/", json={"total_available_places": target})
            if study.get("status") == "UNPUBLISHED":
                self._json("POST", f"studies/{study_id}/transition/", json={"action": "PUBLISH"})
            else:
                # More places reactivate a completed or awaiting-review study by themselves; START is allowed
                # only from PAUSED (a researcher paused it at Prolific), so read the study again first.
                study = self._json("GET", f"studies/{study_id}/")
                if study.get("status") == "PAUSED":
                    self._json("POST", f"studies/{study_id}/transition/", json={"action": "START"})
            for hit in stage_hits:
                yield Published(hit.public_id, study_id)

    def collect(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> list[Work]:
        """Every submission of these studies, all pages (``_study_submissions``)."""
        work: list[Work] = []
        for study_id in hit_external_ids:
            for submission in self._study_submissions(study_id):
                raw = str(submission.get("status", "")).replace("_", " ").upper()
                work.append(
                    Work(
                        external_id=submission["id"],
                        worker_id=submission.get("participant_id") or submission.get("participant", ""),
                        status=STATUS.get(raw, WorkStatus.OTHER),
                        provider_status=raw,
                        hit_external_id=study_id,
                    )
                )
        return work

    def _study_submissions(self, study_id: str) -> Iterator[dict[str, Any]]:
        """``GET /submissions/?study=`` page by page: ``_links.next`` while the response carries it (null at
        the end), else ``meta.count``, else the next ``page`` while pages come back full; an empty
        ``results`` ends it. A 404 is an error, never taken for the end of the list."""
        page, seen, full = 1, 0, 0
        path: str = "submissions/"
        params: dict[str, Any] | None = {"study": study_id, "page": 1}
        while True:
            response = self._request("GET", path, params=params)
            if response.status_code >= 400:
                raise CrowdError(f"prolific GET {path}: HTTP {response.status_code} {_error_text(response)}")
            body = response.json()
            results = body.get("results") or []
            if not results:
                return
            yield from results
            seen += len(results)
            full = max(full, len(results))
            links = body.get("_links")
            count = (body.get("meta") or {}).get("count")
            if isinstance(links, dict) and "next" in links:
                href = (links.get("next") or {}).get("href")
                if not href:
                    return
                path, params = href, None
                continue
            if isinstance(count, int) and seen >= count:
                return
            if count is None and len(results) < full:
                return
            page += 1
            path, params = "submissions/", {"study": study_id, "page": page}

    def approve(self, *, campaign: CampaignInfo, work: Work) -> bool:
        """The transition is idempotent (a repeated request is ignored); a refused one is checked by reading
        the submission, because an approved submission cannot be approved again."""
        if work.status == WorkStatus.APPROVED:
            return True
        response = self._request(
            "POST", f"submissions/{work.external_id}/transition/", json={"action": "APPROVE"}
        )
        if response.status_code < 400:
            return True
        status = self._json("GET", f"submissions/{work.external_id}/").get("status", "")
        return str(status).upper() == "APPROVED"

    def refuse(self, *, campaign: CampaignInfo, work: Work, reason: str) -> bool:
        message = f"{REJECTION_MESSAGE} ({reason})"
        self._json(
            "POST",
            f"submissions/{work.external_id}/transition/",
            json={"action": "REJECT", "message": message, "rejection_category": "OTHER"},
        )
        return True

    def pay_bonus(
        self, *, campaign: CampaignInfo, work: Work, amount_usd: Decimal, reason: str, token: str
    ) -> None:
        """Set up then pay a bonus. Paying is not idempotent on Prolific: the caller records ``token`` and
        calls this once per token."""
        bonus = self._json(
            "POST",
            "submissions/bonus-payments/",
            retry=False,
            json={
                "study_id": work.hit_external_id,
                "csv_bonuses": f"{work.worker_id},{to_cents(amount_usd)}\n",
            },
        )
        self._json("POST", f"bulk-bonus-payments/{bonus['id']}/pay/", retry=False)

    def exclude(self, *, campaign: CampaignInfo, worker_ids: Sequence[str]) -> dict[str, Any]:
        """Add the workers to the campaign's participant group (members already there are ignored)."""
        state = dict(campaign.state)
        done = list(state.get("excluded_workers", []))
        new = [worker_id for worker_id in worker_ids if worker_id not in done]
        if new:
            self._json(
                "POST",
                f"participant-groups/{state['participant_group_id']}/participants/",
                json={"participant_ids": new},
            )
        state["excluded_workers"] = done + new
        return state

    def expire(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> None:
        """Stop the studies (a stopped study reopens only when places are added, i.e. on the next publish)."""
        for study_id in sorted(set(hit_external_ids)):
            study = self._json("GET", f"studies/{study_id}/")
            if study.get("status") in ("ACTIVE", "PAUSED"):
                self._json("POST", f"studies/{study_id}/transition/", json={"action": "STOP"})


def _error_text(response: httpx.Response) -> str:
    """Prolific's error body ``{"error": {"title", "detail"...}}`` in one line."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return f"{error.get('title', '')} {error.get('detail', '')}".strip()[:300]
    return str(error)[:300]
