"""Reads of a campaign's language model (judging.crowd.llm): what it was asked and cost (``campaign_llm_usage``,
the ``llm`` of ``campaign_status --json`` and of the API's campaign detail), each answer for audit
(``campaign_llm_log``, the ``llm_log`` export), and how it compares with the people on the pairs both judged
(``campaign_judge_kinds``, the campaign page)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import TypedDict

from django.db.models import Count, Q, Sum

from judging.crowd.llm import FAILED, POSITION_INCONSISTENT, PREFERENCE, cost_usd, pair_outcome
from judging.engine.agreement import cohen_kappa
from judging.models import LLM_WORKER_PROVIDER, Assignment, Campaign, Judgment, LlmRequest
from pools.models import GradedJudgment


class LlmUsage(TypedDict):
    """The ``llm`` object: ``requests`` sent to the server (a retried reply counts twice), ``cached``
    questions answered from the cache (free), tokens and their cost at the campaign's prices (cached
    questions excluded), and the pairs (and challenges) the model left ``position_inconsistent`` or
    ``failed``."""

    model: str
    requests: int
    cached: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    position_inconsistent: int
    failed: int


def campaign_llm_cost(*, campaign: Campaign) -> tuple[int, int, Decimal]:
    """Tokens in and out the campaign's model was paid for (questions not answered from the cache), and
    their cost at the campaign's prices: the model's share of the spend."""
    sums = LlmRequest.objects.filter(campaign=campaign, is_cached=False).aggregate(
        tokens_in=Sum("answer__tokens_in"), tokens_out=Sum("answer__tokens_out")
    )
    tokens_in, tokens_out = sums["tokens_in"] or 0, sums["tokens_out"] or 0
    return (
        tokens_in,
        tokens_out,
        cost_usd(
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            price_in=campaign.llm_price_in_usd,
            price_out=campaign.llm_price_out_usd,
        ),
    )


def campaign_llm_usage(*, campaign: Campaign) -> LlmUsage | None:
    """The campaign's ``llm`` figures; None for a campaign without a model."""
    if not campaign.has_llm:
        return None
    requests = LlmRequest.objects.filter(campaign=campaign).aggregate(
        sent=Sum("answer__attempts", filter=Q(is_cached=False)), cached=Count("pk", filter=Q(is_cached=True))
    )
    tokens_in, tokens_out, cost = campaign_llm_cost(campaign=campaign)
    ties = Judgment.objects.filter(
        assignment__campaign=campaign, assignment__worker__provider=LLM_WORKER_PROVIDER
    ).aggregate(
        position_inconsistent=Count("pk", filter=Q(tie=Judgment.Tie.POSITION_INCONSISTENT)),
        failed=Count("pk", filter=Q(tie=Judgment.Tie.FAILED)),
    )
    return {
        "model": campaign.llm_model,
        "requests": requests["sent"] or 0,
        "cached": requests["cached"] or 0,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": float(cost.quantize(Decimal("0.000001"))),
        "position_inconsistent": ties["position_inconsistent"],
        "failed": ties["failed"],
    }


class LlmLogRow(TypedDict):
    topic: str
    first: str
    second: str
    model: str
    prompt_hash: str
    choice: int
    outcome: str
    reply: str
    attempts: int
    tokens_in: int
    tokens_out: int
    is_cached: bool
    asked_at: str


def campaign_llm_log(*, campaign: Campaign) -> Iterator[LlmLogRow]:
    """Every question the campaign's model answered, in the order asked: the two items as shown (``first``
    was passage 1), the prompt's hash, the raw replies (joined by `` | `` when a reply was asked again),
    the passage named (1, 2; 0 none), the outcome of the pair its two orders make (``preference``,
    ``position_inconsistent``, ``failed``; blank while the other order is unanswered) and the tokens."""
    rows = list(
        LlmRequest.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list(
            "topic__topic_id",
            "first_id",
            "second_id",
            "first__docid",
            "second__docid",
            "answer__model",
            "answer__prompt_hash",
            "answer__choice",
            "answer__replies",
            "answer__attempts",
            "answer__tokens_in",
            "answer__tokens_out",
            "is_cached",
            "created_at",
        )
    )
    choices = {(topic, first, second): row[7] for row in rows for topic, first, second in [row[0:3]]}
    for row in rows:
        topic, first, second = row[0:3]
        other = choices.get((topic, second, first))
        outcome = "" if other is None else pair_outcome(row[7], other)[0]
        yield {
            "topic": topic,
            "first": row[3],
            "second": row[4],
            "model": row[5],
            "prompt_hash": row[6],
            "choice": row[7],
            "outcome": outcome,
            "reply": " | ".join(row[8]),
            "attempts": row[9],
            "tokens_in": row[10],
            "tokens_out": row[11],
            "is_cached": row[12],
            "asked_at": row[13].isoformat(),
        }


class JudgeKindRow(TypedDict):
    """Pairs answered by one kind of judge, the ties among them, and what they cost."""

    kind: str
    pairs: int
    ties: int
    cost_usd: float


class AgreementRow(TypedDict):
    """Model and people on the pairs both answered: ``agreement`` is the share of pairs where the model's
    preference is the people's majority; ``kappa`` is Cohen's kappa over the same pairs (which passage,
    shown left or right, won); ``ties``: pairs the model left without a preference, not in the other two;
    ``grade_gap`` is the absolute difference of the two passages' NIST grades (None: all pairs)."""

    grade_gap: int | None
    pairs: int
    agreement: float | None
    kappa: float | None
    ties: int


class JudgeKinds(TypedDict):
    kinds: list[JudgeKindRow]
    agreement: list[AgreementRow]


def campaign_judge_kinds(*, campaign: Campaign) -> JudgeKinds:
    """Pairs answered per kind of judge (model, people) with their cost, and the agreement of model and
    people on the pairs both answered (overall and by NIST grade gap). Counted assignments only."""
    model_answers: dict[tuple[int, int, int], tuple[int, str]] = {}
    people_votes: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for topic, left, right, winner, tie, provider in (
        Judgment.objects.filter(
            assignment__campaign=campaign,
            assignment__status=Assignment.Status.ACCEPTED,
            slot__is_challenge=False,
        )
        .order_by("pk")
        .values_list(
            "slot__topic_id",
            "slot__left_id",
            "slot__right_id",
            "winner_id",
            "tie",
            "assignment__worker__provider",
        )
    ):
        key = (topic, min(left, right), max(left, right))
        if provider == LLM_WORKER_PROVIDER:
            model_answers[key] = (winner, tie)
        else:
            people_votes[key].append(winner)
    _, _, llm_cost = campaign_llm_cost(campaign=campaign)
    people_cost = _people_cost(campaign=campaign)
    kinds: list[JudgeKindRow] = []
    if campaign.has_llm:
        kinds.append(
            {
                "kind": "model",
                "pairs": len(model_answers),
                "ties": sum(1 for _, tie in model_answers.values() if tie),
                "cost_usd": float(llm_cost),
            }
        )
    if campaign.has_people:
        kinds.append(
            {"kind": "people", "pairs": len(people_votes), "ties": 0, "cost_usd": float(people_cost)}
        )
    grades = dict(
        (((topic, item), grade))
        for topic, item, grade in GradedJudgment.objects.filter(
            topic__collection_id=campaign.collection_id
        ).values_list("topic_id", "item_id", "grade")
    )
    both = [key for key in model_answers if key in people_votes]
    by_gap: dict[int | None, list[tuple[int, int, str, list[int]]]] = defaultdict(list)
    for key in both:
        topic, low, high = key
        winner, tie = model_answers[key]
        row = (low, winner, tie, people_votes[key])
        by_gap[None].append(row)
        left_grade, right_grade = grades.get((topic, low)), grades.get((topic, high))
        if left_grade is not None and right_grade is not None:
            by_gap[int(round(abs(left_grade - right_grade)))].append(row)
    agreement = [
        _agreement(gap, rows)
        for gap, rows in sorted(by_gap.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
    ]
    return {"kinds": kinds, "agreement": agreement}


def _agreement(gap: int | None, rows: list[tuple[int, int, str, list[int]]]) -> AgreementRow:
    """Agreement and kappa over the pairs the model decided: the model's winner against each person's vote
    (every vote a rating, so a pair judged by two people counts twice, as Cohen's kappa pairs ratings)."""
    model_labels: list[int] = []
    people_labels: list[int] = []
    ties = 0
    for low, winner, tie, votes in rows:
        if tie:
            ties += 1
            continue
        for vote in votes:
            model_labels.append(int(winner == low))
            people_labels.append(int(vote == low))
    agreed = sum(1 for a, b in zip(model_labels, people_labels, strict=True) if a == b)
    return {
        "grade_gap": gap,
        "pairs": len(rows),
        "agreement": agreed / len(model_labels) if model_labels else None,
        "kappa": cohen_kappa(model_labels, people_labels) if model_labels else None,
        "ties": ties,
    }


def _people_cost(*, campaign: Campaign) -> Decimal:
    """What the people's work costs: the campaign's spend without the model's share."""
    from judging.selectors.progress import campaign_spend

    spend = campaign_spend(campaign=campaign)
    return spend.committed + spend.reserved


__all__ = [
    "FAILED",
    "POSITION_INCONSISTENT",
    "PREFERENCE",
    "AgreementRow",
    "JudgeKindRow",
    "JudgeKinds",
    "LlmLogRow",
    "LlmUsage",
    "campaign_judge_kinds",
    "campaign_llm_cost",
    "campaign_llm_log",
    "campaign_llm_usage",
]
