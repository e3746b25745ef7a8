"""How sure a campaign is of its top-k, kept up to date in the background: the judge model
(``judging.engine.judges``: Bradley-Terry scores per topic with the NIST grades as prior, a reliability per judge
from the challenges and from agreement) fitted to every counted answer, stored as ``CampaignConfidence`` with its
time. The sweep refreshes running campaigns at most every ``REFRESH_SECONDS`` and a done campaign once more after
its last answer; an export refits at once. A page never fits."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import F, Q
from django.utils import timezone

from judging.engine import JudgeModel, fit_judge_model
from judging.models import Campaign, CampaignConfidence
from judging.selectors.confidence import campaign_confidence_signature, campaign_judge_model_inputs

# A running campaign's confidence is refitted at most this often: a fit of a CAsT-sized campaign (173 topics,
# 14,000 answers) takes seconds, and the page that shows it says its age.
REFRESH_SECONDS = 300


def campaign_judge_model(*, campaign: Campaign) -> JudgeModel:
    """The judge model fitted now to every counted answer and challenge of ``campaign`` (seeded by the
    campaign's seed, so the same answers give the same probabilities)."""
    inputs = campaign_judge_model_inputs(campaign=campaign)
    return fit_judge_model(
        inputs.votes,
        candidates=inputs.candidates,
        grades=inputs.grades,
        challenges=inputs.challenges,
        k=campaign.k,
        seed=campaign.seed,
    )


def campaign_confidence_refresh(*, campaign: Campaign, force: bool = False) -> CampaignConfidence:
    """Fit the judge model to ``campaign``'s answers and store every candidate's ``p_top_k`` and ``p_best``,
    unless the stored confidence was fitted to the same answers (or, without ``force``, a running campaign's
    is younger than ``REFRESH_SECONDS``). Returns the stored row."""
    stored = CampaignConfidence.objects.filter(campaign=campaign).first()
    now = timezone.now()
    if (
        stored is not None
        and stored.topics  # a draft's fit, of no candidates, does not stand once the campaign has some
        and not force
        and campaign.status != Campaign.Status.DONE
        and now - stored.computed_at < timedelta(seconds=REFRESH_SECONDS)
    ):
        return stored
    signature = campaign_confidence_signature(campaign=campaign)
    if stored is not None and stored.signature == signature:
        return stored
    model = campaign_judge_model(campaign=campaign)
    topics = {
        topic: [[item.docid, round(item.p_top_k, 4), round(item.p_best, 4)] for item in confidence.items]
        for topic, confidence in model.topics.items()
    }
    judges = {
        key: [round(judge.eta, 4), judge.votes, judge.challenges, judge.challenges_failed]
        for key, judge in model.judges.items()
    }
    row, _ = CampaignConfidence.objects.update_or_create(
        campaign=campaign,
        defaults={"signature": signature, "topics": topics, "judges": judges, "computed_at": now},
    )
    return row


def campaign_confidence_running() -> int:
    """Refresh the confidence of every running or paused campaign (at most every ``REFRESH_SECONDS``) and of
    every done campaign fitted before it finished or never fitted; returns how many were fitted."""
    campaigns = Campaign.objects.filter(
        Q(status__in=(Campaign.Status.RUNNING, Campaign.Status.PAUSED))
        | Q(status=Campaign.Status.DONE, top_k_confidence__isnull=True)
        | Q(status=Campaign.Status.DONE, top_k_confidence__computed_at__lt=F("finished_at"))
    ).order_by("pk")
    fitted = 0
    for campaign in campaigns:
        before = (
            CampaignConfidence.objects.filter(campaign=campaign).values_list("computed_at", flat=True).first()
        )
        after = campaign_confidence_refresh(campaign=campaign).computed_at
        fitted += before != after
    return fitted


def confidence_lines(*, campaign: Campaign) -> list[str]:
    """``topic<TAB>docid<TAB>p_top_k<TAB>p_best`` for every candidate of every topic (topics in id order, best
    posterior score first), refitted to the campaign's answers now: the ``confidence`` export."""
    row = campaign_confidence_refresh(campaign=campaign, force=True)
    return [
        f"{topic}\t{docid}\t{p_top_k:.4f}\t{p_best:.4f}\n"
        for topic in sorted(row.topics)
        for docid, p_top_k, p_best in row.topics[topic]
    ]
