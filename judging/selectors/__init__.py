"""Reads of the judging app, one module per read concept:

- ``progress``: where a campaign stands (``CampaignProgress``, the per-topic progress table);
- ``results``: each finished topic's top-k, the preference qrels, ties, intransitive triples;
- ``judgments``: the judgment log (what counts per topic);
- ``workers``: worker analytics;
- ``access``: researchers and the campaigns visible to them; ``actions``: what a campaign's status allows;
- ``judge``: what judges see in the browser;
- ``forecast``: the planner's forecast of what is left;
- ``adaptive``: per topic of an adaptive campaign, what is open, out and tied;
- ``confidence``: the judge model's inputs, and its stored confidence in every candidate (``p_top_k``, ``p_best``).

Every public name is re-exported here, so ``from judging.selectors import X`` works whatever module X is in."""

from judging.selectors.access import (
    RESEARCHERS_GROUP,
    CampaignNameAmbiguousError,
    campaign_get_named,
    campaign_get_visible,
    campaign_list_visible,
    user_is_researcher,
)
from judging.selectors.actions import ACTIONS_BY_STATUS, campaign_allowed_actions
from judging.selectors.adaptive import (
    AdaptiveCrowd,
    AdaptiveTopicRow,
    campaign_adaptive_crowd,
    campaign_adaptive_topics,
)
from judging.selectors.confidence import (
    CampaignConfidenceView,
    TopicConfidenceRow,
    campaign_confidence,
    campaign_judge_model_inputs,
)
from judging.selectors.forecast import Forecast, campaign_forecast
from judging.selectors.judge import (
    JUDGE_ROLES,
    assignment_answered_by,
    assignment_end,
    assignment_held,
    campaign_list_judgeable,
    hit_question_next,
    judge_has_judged,
    judge_overview,
    judge_roles,
    judge_work_left,
    topic_end,
    tournament_pair_answered,
)
from judging.selectors.judgments import campaign_judgment_counts, judgment_is_counted
from judging.selectors.progress import (
    PROGRESS_ALIASES,
    CampaignProgress,
    HeldAssignment,
    ProgressRow,
    ProgressTable,
    Spend,
    campaign_held_assignments,
    campaign_progress,
    campaign_progress_table,
    campaign_spend,
)
from judging.selectors.results import (
    PREFERENCE_KINDS,
    IntransitiveTriple,
    TieAtK,
    TopKItem,
    TopKTopic,
    campaign_candidate_pools,
    campaign_intransitive_triples,
    campaign_preferences,
    campaign_qrels_lines,
    campaign_ranked,
    campaign_ties_at_k,
    campaign_top_k_with_text,
)
from judging.selectors.workers import WorkerRow, campaign_worker_table

__all__ = [
    "CampaignConfidenceView",
    "TopicConfidenceRow",
    "campaign_confidence",
    "campaign_judge_model_inputs",
    "ACTIONS_BY_STATUS",
    "PROGRESS_ALIASES",
    "Spend",
    "campaign_allowed_actions",
    "campaign_spend",
    "AdaptiveCrowd",
    "AdaptiveTopicRow",
    "campaign_adaptive_crowd",
    "campaign_adaptive_topics",
    "HeldAssignment",
    "campaign_held_assignments",
    "JUDGE_ROLES",
    "PREFERENCE_KINDS",
    "RESEARCHERS_GROUP",
    "CampaignProgress",
    "Forecast",
    "IntransitiveTriple",
    "ProgressRow",
    "ProgressTable",
    "TieAtK",
    "TopKItem",
    "TopKTopic",
    "WorkerRow",
    "campaign_candidate_pools",
    "campaign_forecast",
    "CampaignNameAmbiguousError",
    "campaign_get_named",
    "campaign_get_visible",
    "campaign_intransitive_triples",
    "campaign_judgment_counts",
    "assignment_answered_by",
    "assignment_held",
    "campaign_list_judgeable",
    "campaign_list_visible",
    "campaign_preferences",
    "campaign_progress",
    "campaign_progress_table",
    "campaign_qrels_lines",
    "campaign_ranked",
    "campaign_ties_at_k",
    "campaign_top_k_with_text",
    "campaign_worker_table",
    "hit_question_next",
    "judgment_is_counted",
    "judge_has_judged",
    "judge_overview",
    "judge_roles",
    "tournament_pair_answered",
    "assignment_end",
    "judge_work_left",
    "topic_end",
    "user_is_researcher",
]
