"""Writes and workflows of the judging app (STYLE.md: ``<entity>_<verb>``, keyword-only, atomic).

- campaigns: ``campaign_create``, ``campaign_start``, ``campaign_delete``, ``campaign_advance`` (recovery sweep)
- rounds: ``round_generate``, ``round_close_if_complete`` (the engine's topic machine, stored)
- topic_state (import from ``judging.services.topic_state``): the lock-held transitions the others share,
  ``round_store``, ``rounds_open_first`` (a crowd campaign's start), ``tournament_open``, ``topic_close``,
  ``topic_state_load``
- hits: ``hit_build``, ``hit_discard``, ``hit_expire``, ``assignment_expire``, ``hit_expire_overdue`` (the
  overdue sweep)
- judgments: ``worker_get_or_create``, ``worker_exclude``, ``assignment_start``, ``hit_assign_next``,
  ``judgment_submit``, ``judgment_undo``, ``assignment_submit``
- tournaments: ``tournament_next_pair``, ``tournament_judgment_submit``, ``tournament_judgment_undo``
- workers: ``worker_for_user``, ``assignment_start_external``, ``hit_assign_next_external``,
  ``assignment_finish_external`` (judges in the browser)
- pausing: ``campaign_pause``, ``campaign_resume``, ``campaign_publish_more``
- exports: ``export_request``, ``export_build`` (files with their checksum; import from
  ``judging.services.exports``)
- simulated_crowd (import from ``judging.services.simulated_crowd``): ``campaign_simulate``, ``tournament_simulate``,
  simulated workers and assessors driving these services with an engine oracle
"""

from judging.services.campaigns import campaign_advance, campaign_create, campaign_delete, campaign_start
from judging.services.errors import (
    AssignmentClosedError,
    AssignmentOverdueError,
    AssignmentSubmittedError,
    CampaignConfigError,
    CampaignStateError,
    HitLifetimeOverError,
    HitNotOpenError,
    HitTakenError,
    InvalidTimingError,
    InvalidWinnerError,
    JudgingError,
    PairAlreadyJudgedError,
    SessionWaitsError,
    SlotMismatchError,
    TopicLeasedError,
    TournamentPairError,
    UndoRefusedError,
    WorkerBusyError,
    WorkerExcludedError,
)
from judging.services.exclusions import ExclusionScopeError, worker_exclude, worker_is_excluded
from judging.services.hits import assignment_expire, hit_build, hit_discard, hit_expire, hit_expire_overdue
from judging.services.judgments import (
    assignment_claim_external,
    assignment_confirm,
    assignment_start,
    assignment_submit,
    hit_assign_next,
    judgment_submit,
    judgment_undo,
    worker_get_or_create,
)
from judging.services.pausing import campaign_pause, campaign_publish_more, campaign_resume
from judging.services.rounds import round_close_if_complete, round_generate
from judging.services.tournaments import (
    TournamentQuestion,
    tournament_judgment_submit,
    tournament_judgment_undo,
    tournament_next_pair,
)
from judging.services.workers import (
    assignment_finish_external,
    assignment_start_external,
    hit_assign_next_external,
    worker_for_user,
)

__all__ = [
    "assignment_claim_external",
    "assignment_confirm",
    "AssignmentClosedError",
    "AssignmentOverdueError",
    "AssignmentSubmittedError",
    "CampaignConfigError",
    "CampaignStateError",
    "HitLifetimeOverError",
    "HitNotOpenError",
    "HitTakenError",
    "InvalidTimingError",
    "InvalidWinnerError",
    "JudgingError",
    "PairAlreadyJudgedError",
    "SlotMismatchError",
    "TopicLeasedError",
    "UndoRefusedError",
    "TournamentPairError",
    "TournamentQuestion",
    "SessionWaitsError",
    "WorkerBusyError",
    "WorkerExcludedError",
    "assignment_expire",
    "assignment_finish_external",
    "assignment_start",
    "assignment_start_external",
    "assignment_submit",
    "campaign_advance",
    "campaign_create",
    "campaign_delete",
    "campaign_pause",
    "campaign_publish_more",
    "campaign_resume",
    "campaign_start",
    "hit_assign_next",
    "hit_assign_next_external",
    "hit_build",
    "hit_discard",
    "hit_expire",
    "hit_expire_overdue",
    "judgment_submit",
    "judgment_undo",
    "round_close_if_complete",
    "round_generate",
    "tournament_judgment_submit",
    "tournament_judgment_undo",
    "tournament_next_pair",
    "worker_exclude",
    "worker_is_excluded",
    "ExclusionScopeError",
    "worker_for_user",
    "worker_get_or_create",
]
