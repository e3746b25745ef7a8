"""Reads of the judging app, one module per read concept:

- ``progress``: where a campaign stands (``CampaignProgress``, the per-topic progress table);
- ``results``: each finished topic's top-k, the preference qrels, ties, intransitive triples;
- ``judgments``: the judgment log (what counts per topic);
- ``workers``: worker analytics;
- ``access``: researchers and the campaigns visible to them;
- ``judge``: what judges see in the browser;
- ``forecast``: the planner's forecast of what is left.

Every public name is re-exported here, so ``from judging.selectors import X`` works whatever module X is in."""

from judging.selectors.access import (
    RESEARCHERS_GROUP,
    campaign_get_visible,
    campaign_list_visible,
    user_is_researcher,
)
from judging.selectors.forecast import Forecast, campaign_forecast
from judging.selectors.judge import (
    JUDGE_ROLES,
    campaign_list_judgeable,
    hit_question_next,
    judge_has_judged,
    judge_overview,
    judge_roles,
    tournament_progress,
)
from judging.selectors.judgments import campaign_judgment_counts, hit_slot_list_for_worker
from judging.selectors.progress import (
    CampaignProgress,
    ProgressRow,
    ProgressTable,
    campaign_progress,
    campaign_progress_table,
)
from judging.selectors.results import (
    PREFERENCE_KINDS,
    IntransitiveTriple,
    TieAtK,
    TopKItem,
    TopKTopic,
    campaign_intransitive_triples,
    campaign_preferences,
    campaign_qrels_lines,
    campaign_ranked,
    campaign_ties_at_k,
    campaign_top_k_with_text,
)
from judging.selectors.workers import WorkerRow, campaign_worker_table

__all__ = [
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
    "campaign_forecast",
    "campaign_get_visible",
    "campaign_intransitive_triples",
    "campaign_judgment_counts",
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
    "hit_slot_list_for_worker",
    "judge_has_judged",
    "judge_overview",
    "judge_roles",
    "tournament_progress",
    "user_is_researcher",
]
