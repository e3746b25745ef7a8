"""How sure a campaign is of its top-k: the judge model's inputs read from the database (every counted answer
with its judge, every challenge, the NIST grades of the candidates) and its stored output
(``CampaignConfidence``, computed in the background by ``judging.services.confidence``; a page only reads it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Max, Sum

from judging.models import Assignment, Campaign, CampaignConfidence, Candidate, Judgment, TournamentJudgment
from judging.selectors.adaptive import campaign_worker_challenges, worker_key

# How many topics the campaign page lists as the ones the model is least sure of.
LEAST_SURE_TOPICS = 10


def assessor_key(user_id: int) -> str:
    """How a dedicated assessor is named among a campaign's judges (a crowd worker is ``worker_key``)."""
    return f"a{user_id}"


@dataclass
class JudgeModelInputs:
    """What the judge model is fitted to: per topic its candidates, their NIST grades and the counted votes
    ``(item_a, item_b, winner, judge)``, and every challenge answer ``(judge, passed)``."""

    candidates: dict[str, list[str]] = field(default_factory=dict)
    grades: dict[str, dict[str, float]] = field(default_factory=dict)
    votes: dict[str, list[tuple[str, str, str | None, str]]] = field(default_factory=dict)
    challenges: list[tuple[str, bool]] = field(default_factory=list)


def _counted_judgments(campaign: Campaign):
    """The crowd answers that count (``judgment_is_counted``: accepted, confirmed, not a challenge)."""
    return Judgment.objects.filter(
        assignment__campaign=campaign,
        assignment__status=Assignment.Status.ACCEPTED,
        assignment__confirmed_at__isnull=False,
        slot__is_challenge=False,
    )


def campaign_judge_model_inputs(*, campaign: Campaign) -> JudgeModelInputs:
    """Every input of the judge model for ``campaign``, in a fixed order (so a refit is reproducible): the
    candidates of each topic in their pool order, the counted votes in answer order, and each worker's
    challenges from the assignments that were counted or discarded (a discarded HIT's challenges are the very
    evidence that a judge is unreliable)."""
    inputs = JudgeModelInputs()
    rows = (
        Candidate.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic__topic__topic_id", "position")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "grade")
    )
    for topic, docid, grade in rows:
        inputs.candidates.setdefault(topic, []).append(docid)
        inputs.grades.setdefault(topic, {})[docid] = float(grade)
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        votes = (
            TournamentJudgment.objects.filter(campaign_topic__campaign=campaign)
            .order_by("pk")
            .values_list(
                "campaign_topic__topic__topic_id",
                "left__docid",
                "right__docid",
                "winner__docid",
                "assessor_id",
            )
        )
        for topic, left, right, winner, assessor_id in votes:
            inputs.votes.setdefault(topic, []).append((left, right, winner, assessor_key(assessor_id)))
        return inputs
    votes = (
        _counted_judgments(campaign)
        .order_by("pk")
        .values_list(
            "slot__topic__topic_id",
            "slot__left__docid",
            "slot__right__docid",
            "winner__docid",
            "assignment__worker_id",
            "tie",
        )
    )
    for topic, left, right, winner, worker_id, tie in votes:
        if tie == Judgment.Tie.FAILED:
            continue  # no reply named a passage: no answer at all
        # a model whose two orders disagreed said the pair is a tie (Arabzadeh and Clarke, SIGIR 2025)
        vote: str | None = None if tie == Judgment.Tie.POSITION_INCONSISTENT else winner
        inputs.votes.setdefault(topic, []).append((left, right, vote, worker_key(worker_id)))
    inputs.challenges = campaign_challenge_answers(campaign=campaign)
    return inputs


def campaign_challenge_answers(*, campaign: Campaign) -> list[tuple[str, bool]]:
    """Every challenge answer of the counted or discarded HITs as the judge model takes it, ``(judge, passed)``,
    worker by worker."""
    answers_out: list[tuple[str, bool]] = []
    for worker_id, answers, failed in campaign_worker_challenges(campaign=campaign):
        key = worker_key(worker_id)
        answers_out.extend([(key, True)] * (answers - failed) + [(key, False)] * failed)
    return answers_out


def campaign_confidence_signature(*, campaign: Campaign) -> str:
    """What the confidence of ``campaign`` depends on: the number and newest id of its counted answers and of its
    challenge answers, its number of candidates (a draft has none until it starts, and a fit of none must not
    stand for the started campaign's) and k (sha256, the same in every process)."""
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        answers = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).aggregate(
            n=Count("pk"), last=Max("pk")
        )
        parts = [answers["n"], answers["last"], 0]
    else:
        answers = _counted_judgments(campaign).aggregate(n=Count("pk"), last=Max("pk"))
        challenges = Assignment.objects.filter(
            campaign=campaign, status__in=(Assignment.Status.ACCEPTED, Assignment.Status.DISCARDED)
        ).aggregate(n=Sum("challenges"), failed=Sum("challenges_failed"))
        parts = [answers["n"], answers["last"], challenges["n"] or 0, challenges["failed"] or 0]
    candidates = Candidate.objects.filter(campaign_topic__campaign=campaign).count()
    return hashlib.sha256(repr((campaign.k, candidates, *parts)).encode()).hexdigest()


@dataclass(frozen=True)
class ItemConfidenceRow:
    docid: str
    p_top_k: float
    p_best: float


@dataclass(frozen=True)
class TopicConfidenceRow:
    """One topic as the judge model sees it: every candidate (best posterior score first) and how unsure the
    model is of the topic's top-k (``expected_misplaced``: the expected number of candidates on the wrong side
    of the top-k boundary, the sum over candidates of min(p_top_k, 1 - p_top_k))."""

    topic: str
    items: tuple[ItemConfidenceRow, ...]
    expected_misplaced: float

    @property
    def best(self) -> ItemConfidenceRow | None:
        """The candidate most likely the best (highest p_best; under noisy sorting not always the first by
        score)."""
        return max(self.items, key=lambda item: item.p_best, default=None)

    @property
    def doubt(self) -> float:
        """How unsure the model is of the topic: ``expected_misplaced`` plus the probability that its most likely
        best is not the best."""
        best = self.best
        return self.expected_misplaced + (1.0 - best.p_best if best is not None else 0.0)


@dataclass(frozen=True)
class CampaignConfidenceView:
    topics: dict[str, TopicConfidenceRow]
    computed_at: datetime

    def least_sure(self, limit: int = LEAST_SURE_TOPICS) -> list[TopicConfidenceRow]:
        """The topics the model is least sure of, of their top-k or of their best, least sure first (``doubt``;
        topics it is sure of left out)."""
        unsure = [row for row in self.topics.values() if row.doubt >= 0.05]
        return sorted(unsure, key=lambda row: (-row.doubt, row.topic))[:limit]


def campaign_confidence(*, campaign: Campaign) -> CampaignConfidenceView | None:
    """The stored confidence of ``campaign`` (one query), or None until the background has computed it."""
    row = CampaignConfidence.objects.filter(campaign=campaign).first()
    if row is None:
        return None
    topics = {}
    for topic, items in row.topics.items():
        rows = tuple(ItemConfidenceRow(docid=d, p_top_k=p, p_best=b) for d, p, b in items)
        topics[topic] = TopicConfidenceRow(
            topic=topic, items=rows, expected_misplaced=sum(min(r.p_top_k, 1 - r.p_top_k) for r in rows)
        )
    return CampaignConfidenceView(topics=topics, computed_at=row.computed_at)
