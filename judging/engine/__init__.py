"""The judging engine: pure algorithms of top-k preference judging (paper 000 §4-5; pipeline.md).

No Django here: the standard library, numpy, scipy and networkx only. Items are docid strings; a
judgment outcome is a ``(winner, loser)`` tuple; randomness comes from a seeded ``random.Random``
passed in, so the same seed gives the same campaign in a test, the CLI simulator and a Celery task.

- Crowd pipeline (§4.3): ``CrowdParams`` -> ``crowd_round_plan`` (stage 1: ``pairing_graph``; stage 2:
  all pairs) -> ``stage1_close`` (culling, reinstatement) / ``stage2_rank`` -> ``preference_values``.
- Dedicated assessors (§4.2): ``Tournament`` (resumable through ``to_state``/``from_state``).
- Quality control and HITs: ``challenge_pick``, ``challenge_nonrelevant``, ``pack_hits``, ``hit_layout``.
- Simulated assessors: ``PerfectOracle``, ``NoisyOracle``, ``ReplayOracle`` (logs via ``read_judgment_log``).
- Whole campaigns: ``simulate_crowd``, ``simulate_tournament``, ``plan_campaign``.
"""

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
from judging.engine.hits import HitSlot, hit_layout, pack_hits
from judging.engine.judgment_log import JudgmentLogError, JudgmentRecord, read_judgment_log
from judging.engine.oracles import NoisyOracle, Oracle, PerfectOracle, ReplayOracle
from judging.engine.pairing import pairing_graph
from judging.engine.params import CULLING_RULES, CrowdParams, HitShape, Pricing
from judging.engine.planning import plan_campaign
from judging.engine.simulation import (
    RoundRecord,
    SimulationResult,
    TopicOutcome,
    simulate_crowd,
    simulate_tournament,
)
from judging.engine.tournament import Tournament, tournament_judgment_bound

__all__ = [
    "CULLING_RULES",
    "CrowdParams",
    "HitShape",
    "HitSlot",
    "JudgmentLogError",
    "JudgmentRecord",
    "NoisyOracle",
    "Oracle",
    "PerfectOracle",
    "Pricing",
    "RankedItem",
    "ReplayOracle",
    "RoundPlan",
    "RoundRecord",
    "SimulationResult",
    "Stage1Result",
    "TopicOutcome",
    "Tournament",
    "challenge_nonrelevant",
    "challenge_pick",
    "conversation_of",
    "crowd_round_plan",
    "hit_layout",
    "pack_hits",
    "pairing_graph",
    "plan_campaign",
    "preference_values",
    "read_judgment_log",
    "simulate_crowd",
    "simulate_tournament",
    "stage1_close",
    "stage2_rank",
    "tournament_judgment_bound",
]
