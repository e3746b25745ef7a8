"""How sure a campaign is of each topic's top-k: the judge model (``judging.engine.judges``) fitted to the
campaign's answers, the same function ``toppref simulate --confidence-out`` uses (docs/judge-model.md)."""

from __future__ import annotations

from judging.engine import JudgeModel, fit_judge_model
from judging.models import Campaign, Candidate, Judgment, TournamentJudgment


def campaign_confidence(*, campaign: Campaign) -> JudgeModel:
    """The judge model of ``campaign``: every candidate of every topic (its grade the prior), every answer the
    provider confirmed as a vote of its worker (a tournament's: of its assessor), and every challenge answer
    (passed when the candidate won), with the campaign's seed for the posterior draws."""
    candidates: dict[str, list[str]] = {}
    grades: dict[str, dict[str, float]] = {}
    for topic, docid, grade in (
        Candidate.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic__topic__topic_id", "position")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "grade")
    ):
        candidates.setdefault(topic, []).append(docid)
        grades.setdefault(topic, {})[docid] = grade
    pools = {topic: set(docids) for topic, docids in candidates.items()}
    votes: dict[str, list[tuple[str, str, str | None, str]]] = {}
    challenges: list[tuple[str, bool]] = []
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        assessed = (
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
        for topic, left, right, winner, assessor in assessed:
            votes.setdefault(topic, []).append((left, right, winner, f"assessor-{assessor}"))
    else:
        answers = (
            Judgment.objects.filter(assignment__campaign=campaign, assignment__confirmed_at__isnull=False)
            .order_by("pk")
            .values_list(
                "slot__topic__topic_id",
                "slot__left__docid",
                "slot__right__docid",
                "winner__docid",
                "assignment__worker_id",
                "slot__is_challenge",
            )
        )
        for topic, left, right, winner, worker, is_challenge in answers:
            pool = pools.get(topic, set())
            if is_challenge:
                challenges.append((f"worker-{worker}", winner in pool))
            elif left in pool and right in pool:
                votes.setdefault(topic, []).append((left, right, winner, f"worker-{worker}"))
    return fit_judge_model(
        votes, candidates=candidates, grades=grades, challenges=challenges, k=campaign.k, seed=campaign.seed
    )


def campaign_confidence_lines(*, campaign: Campaign) -> list[str]:
    """``topic<TAB>docid<TAB>p_top_k<TAB>p_best`` lines for every candidate of the campaign, topics in order,
    best posterior score first: the ``confidence`` kind of ``campaign_export``, as ``--confidence-out``."""
    model = campaign_confidence(campaign=campaign)
    return [
        f"{topic}\t{item.docid}\t{item.p_top_k:.4f}\t{item.p_best:.4f}\n"
        for topic in sorted(model.topics)
        for item in model.topics[topic].items
    ]
