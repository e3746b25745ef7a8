"""The judging engine: pure algorithms of top-k preference judging (Clarke, Vtyurina and Smucker,
"Assessing top-k preferences", sections 4 and 5).

No Django here: the standard library and the numerical libraries of docs/decisions.md ("What the pure
cores may import") only, enforced by import-linter. Items are docid strings; a
judgment outcome is a ``(winner, loser)`` tuple; randomness comes from seeded ``random.Random``
streams named by the seeding rule (``seeding.py``), so the same seed gives the same campaign in a test,
the CLI simulator and a Celery task.

- Crowd pipeline (section 4.3): one topic machine, ``TopicState`` -> ``topic_round_open`` ->
  ``topic_round_close`` (built on ``crowd_round_plan``: stage 1 ``pairing_graph``, stage 2 all pairs;
  ``stage1_close``: culling, reinstatement; ``stage2_rank``) -> ``preference_values``; the seeding rule
  (``candidate_order``, ``round_rng``, ``tournament_rng``, ``hit_rng``) beside it. The simulator and the
  database services both drive it.
- Adaptive mode (``adaptive.py``): ``AdaptiveState`` -> ``adaptive_round_open`` -> ``adaptive_round_close``
  with an ``ErrorModel`` from ``error_estimate``; pairs chosen from the confirmed comparison graph, a
  sequential test per pair, ties after ``max_votes``.
- A model of every judge (``judges.py``): ``fit_judge_model`` (Bradley-Terry scores with a NIST-grade prior,
  a Crowd-BT reliability per judge) gives every candidate's ``p_top_k`` and ``p_best``, read by noisy sorting
  (``noisy_sorting.py``) for a crowd that reverses at random (``crowd_reverses_at_random``).
- Dedicated assessors (section 4.2): ``Tournament`` (resumable through ``to_state``/``from_state``).
- Quality control and HITs: ``challenge_pick``, ``challenge_nonrelevant``, ``pack_hits``, ``hit_layout`` (``SlotLayout``).
- Simulated assessors: ``PerfectOracle``, ``NoisyOracle``, ``ReplayOracle`` (logs via ``read_judgment_log``).
- Judges against judges: ``read_votes`` (the three log forms, ties kept), ``log_agreement`` (agreement and
  Cohen's kappa on the pairs two logs share), ``route_to_people`` (which pairs a model hands to people).
- Whole campaigns: ``simulate_crowd``, ``simulate_adaptive``, ``simulate_tournament``, ``plan_campaign``; ``top_k_agreement`` scores a
  campaign's top-k against an oracle, ``best_first_ceiling`` what any method can reach with at most
  ``max_votes`` answers per pair.
"""

from judging.engine.adaptive import (
    DEFAULT_ADAPTIVE_PARAMS,
    MAX_MODEL_ROUNDS,
    MODEL_ROUNDS,
    AdaptiveOpening,
    AdaptiveParams,
    AdaptiveState,
    ErrorEvidence,
    ErrorModel,
    adaptive_rank,
    adaptive_round_close,
    adaptive_round_open,
    budget_params,
    error_estimate,
    error_estimate_from_votes,
    open_candidates,
    vote_evidence,
)
from judging.engine.agreement import OracleAgreement, best_first_ceiling, majority_error, top_k_agreement
from judging.engine.challenges import challenge_nonrelevant, challenge_pick, conversation_of
from judging.engine.elimination import (
    RankedItem,
    RoundPlan,
    Stage1Result,
    crowd_round_plan,
    preference_values,
    stage1_close,
    stage2_rank,
)
from judging.engine.hits import SlotLayout, hit_layout, pack_hits, pack_hits_distinct
from judging.engine.judge_agreement import log_agreement
from judging.engine.judges import (
    DEFAULT_JUDGE_MODEL_PARAMS,
    ChallengeAnswer,
    ItemConfidence,
    JudgeModel,
    JudgeModelParams,
    JudgeReliability,
    JudgeVote,
    TopicConfidence,
    crowd_reverses_at_random,
    fit_item_world,
    fit_judge_model,
)
from judging.engine.judgment_log import (
    JudgmentLogError,
    JudgmentRecord,
    Vote,
    VoteLog,
    decisive_records,
    read_judgment_log,
    read_votes,
)
from judging.engine.oracles import (
    ItemScoreOracle,
    NoisyOracle,
    Oracle,
    PerfectOracle,
    ReplayOracle,
    fit_reversal_by_gap,
)
from judging.engine.pairing import pairing_graph
from judging.engine.params import (
    CULLING_RULES,
    DEFAULT_HIT_SHAPE,
    DEFAULT_PARAMS,
    DEFAULT_PRICING,
    MAX_OPPONENTS,
    MAX_PER_HIT,
    MAX_PLAN_WORK,
    MAX_POOL_SIZE,
    MAX_ROUNDS,
    MAX_STAGE2_POOL,
    MAX_TRIALS,
    CrowdParams,
    HitShape,
    Pricing,
    plan_bounds_check,
    plan_work,
)
from judging.engine.planning import PlanTimeExceededError, plan_adaptive, plan_campaign
from judging.engine.routing import route_to_people, routing_order
from judging.engine.seeding import candidate_order, hit_rng, round_rng, tournament_rng
from judging.engine.simulator import (
    RoundRecord,
    SimulationResult,
    TopicOutcome,
    closure_cut_fit,
    closure_cut_ranking,
    closure_rounds_end,
    closure_wave_queue,
    judge_model_start_from_json,
    judge_model_start_to_json,
    model_ranking,
    model_round_close,
    model_round_fit,
    model_round_open,
    model_round_queue,
    model_round_vote_counts,
    simulate_adaptive,
    simulate_crowd,
    simulate_tournament,
)
from judging.engine.topic import (
    RoundClosing,
    RoundOpening,
    TopicState,
    topic_round_close,
    topic_round_open,
)
from judging.engine.tournament import Tournament, tournament_judgment_bound

__all__ = [
    "ItemScoreOracle",
    "DEFAULT_JUDGE_MODEL_PARAMS",
    "ChallengeAnswer",
    "ItemConfidence",
    "JudgeModel",
    "JudgeModelParams",
    "JudgeReliability",
    "JudgeVote",
    "TopicConfidence",
    "fit_item_world",
    "crowd_reverses_at_random",
    "fit_judge_model",
    "MAX_OPPONENTS",
    "MAX_PER_HIT",
    "MAX_PLAN_WORK",
    "MAX_POOL_SIZE",
    "MAX_ROUNDS",
    "MAX_STAGE2_POOL",
    "MAX_TRIALS",
    "plan_bounds_check",
    "plan_work",
    "DEFAULT_ADAPTIVE_PARAMS",
    "MAX_MODEL_ROUNDS",
    "MODEL_ROUNDS",
    "AdaptiveOpening",
    "AdaptiveParams",
    "AdaptiveState",
    "ErrorEvidence",
    "ErrorModel",
    "adaptive_rank",
    "adaptive_round_close",
    "adaptive_round_open",
    "budget_params",
    "error_estimate",
    "error_estimate_from_votes",
    "vote_evidence",
    "fit_reversal_by_gap",
    "open_candidates",
    "simulate_adaptive",
    "closure_cut_fit",
    "closure_cut_ranking",
    "closure_rounds_end",
    "closure_wave_queue",
    "judge_model_start_from_json",
    "judge_model_start_to_json",
    "model_ranking",
    "model_round_close",
    "model_round_fit",
    "model_round_open",
    "model_round_queue",
    "model_round_vote_counts",
    "CULLING_RULES",
    "CrowdParams",
    "DEFAULT_HIT_SHAPE",
    "DEFAULT_PARAMS",
    "DEFAULT_PRICING",
    "HitShape",
    "JudgmentLogError",
    "JudgmentRecord",
    "NoisyOracle",
    "Oracle",
    "PerfectOracle",
    "Pricing",
    "OracleAgreement",
    "RankedItem",
    "ReplayOracle",
    "RoundClosing",
    "RoundOpening",
    "RoundPlan",
    "RoundRecord",
    "SimulationResult",
    "SlotLayout",
    "Stage1Result",
    "TopicOutcome",
    "TopicState",
    "Tournament",
    "challenge_nonrelevant",
    "candidate_order",
    "challenge_pick",
    "conversation_of",
    "crowd_round_plan",
    "hit_layout",
    "hit_rng",
    "pack_hits",
    "pack_hits_distinct",
    "pairing_graph",
    "plan_adaptive",
    "plan_campaign",
    "PlanTimeExceededError",
    "preference_values",
    "read_judgment_log",
    "round_rng",
    "simulate_crowd",
    "simulate_tournament",
    "stage1_close",
    "stage2_rank",
    "topic_round_close",
    "topic_round_open",
    "tournament_judgment_bound",
    "tournament_rng",
    "top_k_agreement",
    "best_first_ceiling",
    "majority_error",
    "Vote",
    "VoteLog",
    "read_votes",
    "decisive_records",
    "log_agreement",
    "route_to_people",
    "routing_order",
]
