"""Adaptive pair selection: round-based, batch-parallel top-k judging from the comparison graph of what is
already confirmed (docs/decisions.md "Adaptive mode").

The paper's crowd procedure (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.3) pairs
candidates at random in every stage-1 round. This mode keeps its batches and its all-pairs stage 2 but chooses
each round's pairs from what earlier rounds confirmed, in the spirit of the round-efficient dueling bandits of
Lin and Lu (ACML 2018) that Yan, Luo, Clarke et al. adapted to human judges ("Human Preferences as Dueling
Bandits", SIGIR 2022, sections 4 and 5): an algorithm for human judges must tolerate ties and limit how often one
pair is judged, each repeat going to another assessor.

One topic is a pure state machine, like ``topic.py`` for the crowd mode; the simulator and the database
services both drive it:

    AdaptiveState --adaptive_round_open--> AdaptiveOpening (pair requests, or the final ranking)
    AdaptiveState + votes + ErrorModel --adaptive_round_close--> AdaptiveState (pairs confirmed or tied)

- **Votes and the sequential test.** A pair's votes are ``(winner, worker)``. Under an error model (the
  probability ``e`` that a judge reverses the true order, per worker where the data allow) the log-likelihood
  ratio of the two orders is the sum of +-log((1-e_w)/e_w) over its votes; the pair is *confirmed* once that
  ratio reaches log(c/(1-c)), c = ``confidence`` (the posterior probability, from even prior odds, that the
  confirmed order is right: Wald's sequential probability ratio test). A reliable crowd confirms with one vote,
  a noisy one needs a margin. A pair still short of the threshold after ``max_votes`` votes, or that can no
  longer reach it within them, is a *tie* and is never asked again (Yan et al.: ties are real and repeats are
  costly).
- **Elimination through confirmed chains.** Only confirmed pairs enter the comparison graph; a candidate leaves
  once k others are above it through chains of confirmed pairs (the transitive closure), since then it cannot
  be in the top-k.
- **Pair choice.** While more than F candidates are open, each round pairs every open candidate with at most
  ``pairs_per_round`` others it cannot yet be ordered against, choosing first the pairs whose outcome moves
  the most candidates toward k confirmed betters (expected over a win-ratio estimate of who wins): the pairs
  that settle top-k membership. Ties between equally useful pairs are broken by the round's random source
  (``seeding.round_rng``), so a round depends on (seed, topic, round, votes) only.
- **Stage 2.** Once at most F candidates are open (or no open pair can be asked, or, under a crowd estimated
  clean, at most CLEAN_FINAL_PAIRS pairs of open candidates are unordered), the paper's all-pairs stage
  finishes the topic: every pair of open candidates not yet ordered by the graph is asked, and the candidates
  are ranked by wins (a tie counting half), competition ranks, every item tied at rank k kept.
- **Verification.** Before a topic ends, every confirmed pair between two items of its final top-k, and
  every one in which a top-k item beat a candidate with exactly k others above it (the k-th/(k+1)-th
  boundary), whose votes fall short of the decisive level (the risk 1-c cut to ELIMINATION_RISK of it) is
  asked again, to new workers, until it reaches that level either way or ends as a tie within
  ``max_votes``; a candidate a verified pair no longer keeps out is open again. These few pairs decide the
  best item and the last place of the top-k, and a pair confirmed at c alone is wrong 1-c of the time (on
  CAsT with 10% reversed judgments about 3 of 173 best items were lost that way). At a budget, which cuts the
  topics' last rounds, the check of a candidate's only direct loss comes as soon as that loss puts it out
  (``lone_loss_rechecks``), and the verification keeps to the pairs that decide rank 1 or rest on one loss
  (``budget_params``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judging.engine.elimination import RankedItem
from judging.engine.seeding import audit_rng, round_rng

Pair = tuple[str, str]
Vote = tuple[str, str]  # (winner, worker)

# The prior of the error estimate: as if 250 reference answers with 1 error had been seen (an error rate of
# 0.004), so a crowd without any observed error confirms a pair with one vote even where a confirmation
# eliminates a candidate (ELIMINATION_RISK below).
PRIOR_ERRORS = 1.0
PRIOR_ANSWERS = 250.0
# An elimination is final (only a verification at the k boundary reopens it), and an early wrong edge spreads
# through every chain built on it, so a pair whose confirmation would eliminate a candidate, or between two
# candidates with fewer than TOP_CONTENDER others confirmed above them (in a topic's first round: every pair),
# is confirmed at this fraction of the risk 1 - confidence (0.005 at the default 0.95: the decisive level). On CAsT with 10% reversed judgments this lifted best-first from
# about 162 to about 170 of 173 (docs/decisions.md "Adaptive mode").
ELIMINATION_RISK = 0.1
TOP_CONTENDER = 1
# ... but a candidate that has lost directly to ELIMINATION_LOSSES others (this pair included) is out at the
# plain risk: independent confirmed losses already make it unlikely to belong in the top-k, so its last edge
# need not carry the whole weight. On CAsT at 10% error (seeds 0-7, before the verification rounds) this saved
# 370 judgments a run (15,365 -> 14,994) for the same best first and tie-aware recall 0.991 -> 0.990
# (docs/decisions.md "Adaptive mode").
ELIMINATION_LOSSES = 3
# A pair is between two contenders only once both have won at least CONTENDER_WINS pairs (0: in a topic's first
# round every pair is).
CONTENDER_WINS = 0
# At a budget (``budget_params``) the closure rounds confirm a pair between two contenders for rank 1, and one that
# eliminates a candidate, at BUDGET_RISK_SHARE of the risk instead of ELIMINATION_RISK, and a candidate that lost
# directly to BUDGET_ELIMINATION_LOSSES others is out at the plain risk; the two candidates first by score whose
# pair ended as an even split get one more vote (``split_best_pairs``). On CAsT with 10% reversed judgments and no
# budget (seeds 0-4) this spent 14,454 judgments instead of about 15,850 (docs/decisions.md "Closure rounds at a
# budget").
BUDGET_RISK_SHARE = 0.2
BUDGET_ELIMINATION_LOSSES = 2
# ... and, since a budget cuts the topics' last rounds, where the verification used to catch a wrong edge, it moves
# the catch earlier and pays for it out of the first round: a candidate out through its only direct loss has that
# loss asked again to the decisive level in the next round, whatever stage the topic is in
# (``lone_loss_rechecks``; of the true top-5 items lost at a budget, most fell to one wrong 2-0 confirmation, often
# their only loss); a topic's first-round pairs are confirmed at the plain risk (a contender must have won once,
# BUDGET_CONTENDER_WINS), an eliminating pair at BUDGET_ELIMINATION_RISK_SHARE of the risk (two agreeing votes at
# 10% reversals), the verification asks only the top-k pairs that touch an item ranked first or are their loser's
# only direct loss (the others order ranks 2-5 among themselves, at about 900 judgments a run) and counts no vote
# on a pair of the item ranked first above the crowd's rate (two votes of workers with lucky records otherwise
# settle it), and the final ranking counts majorities before vote shares (``adaptive_rank``). On CAsT with 10%
# reversed judgments at 14,000 (seeds 10-29) this gave 13,728 judgments, tie-aware recall 0.985 and best first
# 170.9 where the rules above gave 13,955, 0.981 and 168.1 (docs/decisions.md "Closure rounds at a budget: the
# catch moved early").
BUDGET_CONTENDER_WINS = 1
BUDGET_ELIMINATION_RISK_SHARE = 0.3
# The share of the pairs asked for the first time in a topic's first AUDIT_ROUNDS rounds that get a second
# vote at once, whatever the estimate: the disagreement on these audited pairs is what reveals a crowd that
# passes its challenges but errs on close pairs (Yan et al., section 5: crowd judges disagree on near ties).
AUDIT_SHARE = 0.05
AUDIT_ROUNDS = 2
# Pair choice: a selection round asks the pairs worth at least SELECT_SHARE of its most useful pair, keeping at
# least 1/MIN_BUSY of its open candidates busy. Once the crowd's estimated error rate reaches NOISY_RATE, every
# confirmed edge costs two or three votes, so a round is sparser: NOISY_SELECT_SHARE and 1/NOISY_MIN_BUSY. On
# CAsT with 10% reversed judgments (seeds 1-3) this cut 18,400 judgments to 15,300 and lifted tie-aware recall
# from 0.990 to 0.992 and best first from 168 to 170, for 38 rounds instead of 17 (docs/decisions.md
# "Adaptive mode").
SELECT_SHARE = 0.4
MIN_BUSY = 4
NOISY_RATE = 0.05
NOISY_SELECT_SHARE = 0.8
NOISY_MIN_BUSY = 8
# Under a crowd estimated below NOISY_RATE, a topic moves to the all-pairs stage as soon as at most
# CLEAN_FINAL_PAIRS pairs of open candidates are left unordered: its last selection rounds would ask them one
# or two at a time, and the topics with the largest pools set the campaign's rounds by those tails. On CAsT
# with a perfect judge (seeds 0-9) 12.2 rounds fell to 11.7 for 23 more judgments a run (docs/decisions.md
# "Adaptive mode"). A noisy crowd keeps its sparse rounds: there a pair of the all-pairs stage costs two or
# three votes whether it settles anything or not.
CLEAN_FINAL_PAIRS = 3
# A worker's own estimate is shrunk toward the crowd's with the weight of this many answers ...
WORKER_SHRINKAGE = 20.0
# ... once the workers' records differ beyond chance (Pearson's chi-square test of homogeneity at this level);
# until then every worker is read at the crowd's rate. Under a crowd that reverses uniformly, a worker whose
# record looks clean is only lucky: two of its votes passed levels that need three of the crowd's, and most of
# the 1-vote pairs confirmed wrong came from such workers. On CAsT with 10% reversed judgments at 14,000
# (seeds 10-29), with the boundary verified where it holds a loser out and the ranks below the first ordered by
# one vote (``budget_params``), tie-aware recall went from 0.986 to 0.989 for the same judgments and best first;
# each worker shrunk by the spread of the records instead gave 0.988 (docs/decisions.md, "Closure rounds at a
# budget: 0.989 at 14,000").
WORKER_HOMOGENEITY_LEVEL = 0.01
# At a budget, the judge model's rounds end by this round of the campaign, closure waves included, the budget
# spread evenly over the rounds left (``judges.model_round_limit``): crowd log, 14,000 judgments, seed 0: 0.844 /
# 123 in 6 rounds of about 2,600 judgments, 0.895 / 126 in 15 rounds of 747 (docs/decisions.md, "The model rounds
# at a budget"). More rounds buy a little more with time alone (docs/decisions.md, "The model rounds: more of
# them, smaller"); the goals hold a campaign to 15.
MODEL_ROUNDS = 15
# A campaign's model rounds can be set up to this many (each round is a wave of HITs the crowd must finish).
MAX_MODEL_ROUNDS = 1000
MIN_ERROR, MAX_ERROR = 0.001, 0.45


@dataclass(frozen=True)
class AdaptiveParams:
    """``k``: depth of the top-k; ``F``: the all-pairs stage starts when at most F candidates are open (the
    paper's stage 2; 5 by default, not the paper's 9: the confirmed graph already orders most of a larger
    pool's pairs, and selection rounds reach the rest for fewer judgments); ``max_votes``: votes a pair may get before it is a tie; ``confidence``: the probability
    that a confirmed pair's order is right; ``pairs_per_round``: the most pairs one candidate is in per
    selection round; ``max_rounds``: after this many selection rounds the all-pairs stage is forced;
    ``votes_per_candidate``: once a topic has spent this many votes per candidate (the paper's procedure spends
    about 5.3 on CAsT), it is ranked as it stands (``adaptive_rank``), so a crowd too noisy to confirm pairs
    cannot spend without bound on near ties. ``contender_risk_share`` and ``elimination_risk_share``: the share
    of the risk 1 - confidence at which a pair between two contenders for rank 1, and a pair whose confirmation
    eliminates a candidate, is confirmed (``thresholds``); ``elimination_losses``: a candidate that lost directly
    to this many others is out at the plain risk; ``break_best_ties``: the pair of the two candidates first by
    score that ended as an even split gets one more vote before the topic ends (``split_best_pairs``);
    ``contender_wins``: the wins each of two candidates needs before their pair is a contender pair;
    ``recheck_lone_losses``: a candidate out through its only direct loss has that loss asked again to the decisive
    level (``lone_loss_rechecks``); ``verify_every_top_pair``: the verification asks every short pair between two
    items of the top-k, or (False) only those that touch an item ranked first or are their loser's only direct
    loss; ``rank_by_majorities``: the final ranking counts pairs won (confirmed, or led on votes) before vote
    shares (``adaptive_rank``); ``verify_first_at_crowd_rate``: in the verification, a pair with an item ranked
    first counts no worker's vote above the crowd's rate; ``verify_load_bearing_only``: the verification of the
    boundary (``weak_boundary_pairs``) asks only the pairs whose tie would let their loser back in;
    ``verify_next_out``: that verification also takes the candidates one further out, with k+1 others above them,
    that won a pair, and their losses to candidates out of the top-k too;
    ``one_vote_below_first``: once at most k candidates are open, the all-pairs stage confirms only the pairs
    between two candidates nobody is confirmed above, and asks each other pair one vote, once;
    ``model_rounds``: at a budget, once the judge model chooses the pairs, its rounds end by this round of the
    campaign (closure waves included), the budget spread evenly over the rounds left: more rounds buy quality
    with time, not judgments. The defaults are the closure rounds without a budget; ``budget_params`` gives those
    at a budget."""

    k: int = 5
    F: int = 5
    max_votes: int = 5
    confidence: float = 0.95
    pairs_per_round: int = 1
    max_rounds: int = 60
    votes_per_candidate: float = 8.0
    contender_risk_share: float = ELIMINATION_RISK
    elimination_risk_share: float = ELIMINATION_RISK
    elimination_losses: int = ELIMINATION_LOSSES
    break_best_ties: bool = False
    contender_wins: int = CONTENDER_WINS
    recheck_lone_losses: bool = False
    verify_every_top_pair: bool = True
    rank_by_majorities: bool = False
    verify_first_at_crowd_rate: bool = False
    verify_load_bearing_only: bool = False
    verify_next_out: bool = False
    one_vote_below_first: bool = False
    model_rounds: int = MODEL_ROUNDS

    def validate(self) -> None:
        """Raise ``ValueError`` naming the violated rule."""
        if self.k < 1:
            raise ValueError(f"k must be at least 1 (got k={self.k})")
        if self.F < self.k:
            raise ValueError(f"F must be at least k (got F={self.F}, k={self.k})")
        if self.max_votes < 1:
            raise ValueError(f"max votes must be at least 1 (got {self.max_votes})")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be above 0.5 and below 1 (got {self.confidence})")
        if self.pairs_per_round < 1:
            raise ValueError(f"pairs per round must be at least 1 (got {self.pairs_per_round})")
        if self.max_rounds < 1:
            raise ValueError(f"max rounds must be at least 1 (got {self.max_rounds})")
        if not self.votes_per_candidate > 0:
            raise ValueError(f"votes per candidate must be positive (got {self.votes_per_candidate})")
        for name in ("contender_risk_share", "elimination_risk_share"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name.replace('_', ' ')} must be in (0, 1] (got {getattr(self, name)})")
        if self.elimination_losses < 1:
            raise ValueError(f"elimination losses must be at least 1 (got {self.elimination_losses})")
        if self.contender_wins < 0:
            raise ValueError(f"contender wins must be at least 0 (got {self.contender_wins})")
        if not 1 <= self.model_rounds <= MAX_MODEL_ROUNDS:
            raise ValueError(f"model rounds must be in [1, {MAX_MODEL_ROUNDS}] (got {self.model_rounds})")


DEFAULT_ADAPTIVE_PARAMS = AdaptiveParams()


def budget_params(params: AdaptiveParams) -> AdaptiveParams:
    """The closure rounds' parameters when a campaign has a judgment budget: ``params`` with contender pairs
    confirmed at BUDGET_RISK_SHARE of the risk and only once both candidates have won (BUDGET_CONTENDER_WINS),
    eliminating pairs at BUDGET_ELIMINATION_RISK_SHARE, candidates out at the plain risk after
    BUDGET_ELIMINATION_LOSSES direct losses, the first two candidates' evenly split pair given a deciding vote, a
    candidate's only direct loss asked again when it puts the candidate out, the verification kept to the pairs
    that decide rank 1 or rest on one loss (those of rank 1 at the crowd's rate) and, at the boundary, to the
    pairs that keep their loser out, the pairs below the first ordered by one vote, and the ranking by majorities
    first. Without a budget the adaptive mode keeps ``params`` as they are (a database campaign equals the
    simulator)."""
    return replace(
        params,
        contender_risk_share=BUDGET_RISK_SHARE,
        elimination_risk_share=BUDGET_ELIMINATION_RISK_SHARE,
        elimination_losses=BUDGET_ELIMINATION_LOSSES,
        break_best_ties=True,
        contender_wins=BUDGET_CONTENDER_WINS,
        recheck_lone_losses=True,
        verify_every_top_pair=False,
        rank_by_majorities=True,
        verify_first_at_crowd_rate=True,
        verify_load_bearing_only=True,
        verify_next_out=True,
        one_vote_below_first=True,
    )


@dataclass(frozen=True)
class ErrorModel:
    """The estimated probability that a judge reverses a pair's true order: ``rate`` for the crowd and
    ``per_worker`` where a worker's own answers allow (``error_estimate``)."""

    rate: float = PRIOR_ERRORS / PRIOR_ANSWERS
    per_worker: Mapping[str, float] = field(default_factory=dict)

    def of(self, worker: str) -> float:
        return self.per_worker.get(worker, self.rate)

    def weight(self, worker: str) -> float:
        """The log-likelihood ratio one vote of ``worker`` carries."""
        e = min(MAX_ERROR, max(MIN_ERROR, self.of(worker)))
        return math.log((1 - e) / e)


def pair_key(a: str, b: str) -> Pair:
    """The canonical form of an unordered pair: its two docids sorted."""
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True)
class AdaptiveState:
    """One topic between rounds: its ``candidates`` (canonical order), the rounds opened so far, the votes of
    every pair asked (``pair_key`` -> votes in arrival order), the ``decided`` pairs (winner, or None for a
    tie: final) and whether the all-pairs stage has started (``final_stage``)."""

    topic: str
    candidates: tuple[str, ...]
    rounds: int = 0
    votes: Mapping[Pair, tuple[Vote, ...]] = field(default_factory=dict)
    decided: Mapping[Pair, str | None] = field(default_factory=dict)
    final_stage: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON form for storage (database rows keep it on the topic)."""
        return {
            "rounds": self.rounds,
            "final_stage": self.final_stage,
            "votes": [[a, b, [list(v) for v in votes]] for (a, b), votes in sorted(self.votes.items())],
            "decided": [[a, b, w] for (a, b), w in sorted(self.decided.items())],
            # Kept beside the votes so a campaign's error estimate reads one small summary per topic
            # instead of every topic's votes (``error_estimate_from_votes``).
            "evidence": vote_evidence(self),
        }

    @classmethod
    def from_json(
        cls, topic: str, candidates: Sequence[str], data: Mapping[str, Any] | None
    ) -> AdaptiveState:
        data = data or {}
        return cls(
            topic=topic,
            candidates=tuple(candidates),
            rounds=int(data.get("rounds", 0)),
            final_stage=bool(data.get("final_stage", False)),
            votes={(a, b): tuple((w, u) for w, u in votes) for a, b, votes in data.get("votes", [])},
            decided={(a, b): w for a, b, w in data.get("decided", [])},
        )


@dataclass(frozen=True)
class Request:
    """One pair of a round and how many votes (each from a different worker) it should get in it."""

    pair: Pair
    votes: int


@dataclass(frozen=True)
class AdaptiveOpening:
    """Round ``number``: its ``requests`` and ``stage`` (1 selection, 2 all pairs); when there is nothing left
    to ask, ``ranked`` holds the final ranking."""

    number: int
    stage: int
    requests: list[Request]
    ranked: list[RankedItem] | None = None

    @property
    def is_final(self) -> bool:
        return self.ranked is not None


@dataclass(frozen=True)
class Graph:
    """The comparison graph of the confirmed pairs as bitmasks over ``candidates``: ``below[i]`` holds every
    candidate under i through a chain, ``above[i]`` every one over it (i itself excluded, and so is every
    candidate on a cycle with i, which is both);
    ``losses[i]`` counts the confirmed pairs i lost directly."""

    candidates: tuple[str, ...]
    below: list[int]
    above: list[int]
    losses: list[int] = field(default_factory=list)

    def comparable(self, i: int, j: int) -> bool:
        return bool(self.below[i] >> j & 1 or self.below[j] >> i & 1)

    def above_count(self, i: int) -> int:
        return self.above[i].bit_count()


def comparison_graph(state: AdaptiveState) -> Graph:
    """The transitive closure of the confirmed pairs (ties are not edges)."""
    index = {docid: i for i, docid in enumerate(state.candidates)}
    n = len(state.candidates)
    direct = [0] * n
    for (a, b), winner in state.decided.items():
        if winner is None or a not in index or b not in index:
            continue
        loser = b if winner == a else a
        direct[index[winner]] |= 1 << index[loser]
    below = [0] * n
    for i in range(n):
        seen, frontier = 0, direct[i]
        while frontier:
            seen |= frontier
            nxt = 0
            bits = frontier
            while bits:
                low = bits & -bits
                nxt |= direct[low.bit_length() - 1]
                bits ^= low
            frontier = nxt & ~seen
        below[i] = seen & ~(1 << i)
    above = [0] * n
    for i in range(n):
        bits = below[i]
        while bits:
            low = bits & -bits
            above[low.bit_length() - 1] |= 1 << i
            bits ^= low
    # Candidates on one cycle of confirmed pairs (a noisy crowd's contradiction) are each above and below the
    # other: neither is confirmed better, so neither counts toward the other's k betters (else a cycle of k+1
    # of them would put every one out, and with k = 1 a 3-cycle leaves a topic with no ranking); their pairs
    # are unordered, asked if never asked and otherwise ranked by their votes.
    for i in range(n):
        mutual = below[i] & above[i]
        below[i] &= ~mutual
        above[i] &= ~mutual
    losses = [0] * n
    for i in range(n):
        bits = direct[i]
        while bits:
            low = bits & -bits
            losses[low.bit_length() - 1] += 1
            bits ^= low
    return Graph(candidates=state.candidates, below=below, above=above, losses=losses)


def open_candidates(state: AdaptiveState, *, k: int, graph: Graph | None = None) -> list[str]:
    """The candidates still open: fewer than k others above them through confirmed chains."""
    graph = graph or comparison_graph(state)
    return [docid for i, docid in enumerate(state.candidates) if graph.above_count(i) < k]


def llr(votes: Iterable[Vote], pair: Pair, errors: ErrorModel) -> float:
    """The log-likelihood ratio of ``pair[0]`` over ``pair[1]`` from ``votes`` (positive: pair[0] ahead)."""
    return sum(errors.weight(worker) * (1 if winner == pair[0] else -1) for winner, worker in votes)


def thresholds(
    graph: Graph, pair: Pair, *, params: AdaptiveParams, alive: int, errors: ErrorModel
) -> tuple[float, float]:
    """The log-likelihood ratio that confirms ``pair[0]`` over ``pair[1]``, and the reverse: log(c/(1-c)),
    with the risk 1-c cut to ELIMINATION_RISK of it when that confirmation would eliminate a candidate (while
    the crowd can reach that level at all: ``decisive_within_reach``)."""
    risk = 1 - params.confidence
    if not decisive_within_reach(params, errors):
        plain = math.log((1 - risk) / risk)
        return plain, plain
    index = {docid: i for i, docid in enumerate(graph.candidates)}
    i, j = index[pair[0]], index[pair[1]]
    out = []
    # A pair between two candidates nobody is confirmed above decides which of them can still be the best.
    contenders = all(
        graph.above_count(x) < TOP_CONTENDER and graph.below[x].bit_count() >= params.contender_wins
        for x in (i, j)
    )
    for winner, loser in ((i, j), (j, i)):
        if contenders:
            r = risk * params.contender_risk_share
        elif _eliminates(graph, winner, loser, params.k, alive, losses=params.elimination_losses):
            r = risk * params.elimination_risk_share
        else:
            r = risk
        out.append(math.log((1 - r) / r))
    return out[0], out[1]


def votes_wanted(
    votes: Sequence[Vote],
    pair: Pair,
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    limits: tuple[float, float],
) -> int:
    """How many more votes to ask for ``pair`` in one round: as many as would confirm the leading side if they
    all agreed (a crowd's votes are gathered in parallel, so asking them together saves rounds), within
    ``max_votes``."""
    ratio = llr(votes, pair, errors)
    gap = (limits[0] - ratio) if ratio > 0 else (limits[1] + ratio) if ratio < 0 else min(limits)
    step = errors.weight("")
    needed = max(1, math.ceil(gap / step - 1e-9))
    return max(0, min(needed, params.max_votes - len(votes)))


def decide(
    votes: Sequence[Vote],
    pair: Pair,
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    limits: tuple[float, float],
) -> str | None | bool:
    """The sequential test: the winner when confirmed, None when the pair is a tie (``max_votes`` reached, or
    the remaining votes cannot confirm either side), False while it stays open."""
    ratio = llr(votes, pair, errors)
    if ratio >= limits[0] - 1e-9:
        return pair[0]
    if -ratio >= limits[1] - 1e-9:
        return pair[1]
    reach = (params.max_votes - len(votes)) * errors.weight("")
    if reach <= 0 or (ratio + reach < limits[0] - 1e-9 and -ratio + reach < limits[1] - 1e-9):
        return None
    return False


def _eliminates(graph: Graph, winner: int, loser: int, k: int, alive: int, *, losses: int) -> bool:
    """Whether a confirmed ``winner`` over ``loser`` would leave an open candidate with k betters (one that has
    not lost directly to ``losses`` others, this pair included)."""
    new_above = graph.above[winner] | (1 << winner)
    bits = (graph.below[loser] | (1 << loser)) & alive
    while bits:
        low = bits & -bits
        x = low.bit_length() - 1
        bits ^= low
        if ((graph.above[x] | new_above) & ~(1 << x)).bit_count() >= k and graph.losses[x] + (
            x == loser
        ) < losses:
            return True
    return False


def _win_estimate(graph: Graph, i: int, j: int) -> float:
    """A rough probability that i beats j: a Bradley-Terry form of the win ratios of the closure."""
    si = (graph.below[i].bit_count() + 1) / (graph.above[i].bit_count() + 1)
    sj = (graph.below[j].bit_count() + 1) / (graph.above[j].bit_count() + 1)
    return si / (si + sj)


def _gain(graph: Graph, winner: int, loser: int, k: int, alive: int) -> int:
    """How far a confirmed ``winner`` over ``loser`` moves open candidates toward k confirmed betters."""
    new_above = graph.above[winner] | (1 << winner)
    gain = 0
    bits = (graph.below[loser] | (1 << loser)) & alive
    while bits:
        low = bits & -bits
        x = low.bit_length() - 1
        bits ^= low
        before = graph.above[x].bit_count()
        after = (graph.above[x] | new_above).bit_count() - (1 if new_above >> x & 1 else 0)
        gain += min(k, after) - min(k, before)
    return gain


def adaptive_round_open(
    state: AdaptiveState, *, params: AdaptiveParams, seed: int, errors: ErrorModel
) -> AdaptiveOpening:
    """Plan round ``state.rounds + 1``: the pairs to ask and how many votes each, or the final ranking."""
    number = state.rounds + 1
    graph = comparison_graph(state)
    index = {docid: i for i, docid in enumerate(state.candidates)}
    alive_list = [i for i in range(len(state.candidates)) if graph.above_count(i) < params.k]
    alive = 0
    for i in alive_list:
        alive |= 1 << i

    def askable(i: int, j: int) -> bool:
        key = pair_key(state.candidates[i], state.candidates[j])
        return key not in state.decided and not graph.comparable(i, j)

    spent = sum(len(votes) for votes in state.votes.values())
    if spent >= params.votes_per_candidate * len(state.candidates):
        return _verify_or_rank(state, number=number, params=params, errors=errors)
    final = state.final_stage or len(alive_list) <= params.F or state.rounds >= params.max_rounds
    if not final and errors.rate < NOISY_RATE:
        unordered = sum(1 for x, i in enumerate(alive_list) for j in alive_list[x + 1 :] if askable(i, j))
        final = unordered <= CLEAN_FINAL_PAIRS
    audit = audit_rng(seed=seed, topic_id=state.topic, number=number)
    if not final:
        rng = round_rng(seed=seed, topic_id=state.topic, number=number)
        load = dict.fromkeys(alive_list, 0)
        chosen: list[tuple[int, int]] = []
        # Pairs already under way (asked, not yet decided) continue first: their votes are spent.
        for a, b in sorted(state.votes):
            if (a, b) in state.decided or a not in index or b not in index:
                continue
            i, j = index[a], index[b]
            if i in load and j in load and askable(i, j):
                if load[i] < params.pairs_per_round and load[j] < params.pairs_per_round:
                    chosen.append((i, j))
                    load[i] += 1
                    load[j] += 1
        scored = []
        for x, i in enumerate(alive_list):
            for j in alive_list[x + 1 :]:
                if not askable(i, j):
                    continue
                p = _win_estimate(graph, i, j)
                value = p * _gain(graph, i, j, params.k, alive) + (1 - p) * _gain(
                    graph, j, i, params.k, alive
                )
                scored.append((value, rng.random(), i, j))
        if scored:
            scored.sort(key=lambda s: (-s[0], s[1]))
            # A round asks the pairs worth at least a share of the best one, but keeps some open candidates busy:
            # the first saves judgments on pairs that settle little, the second bounds rounds.
            noisy = errors.rate >= NOISY_RATE
            floor = (NOISY_SELECT_SHARE if noisy else SELECT_SHARE) * scored[0][0]
            min_busy = NOISY_MIN_BUSY if noisy else MIN_BUSY
            for value, _tiebreak, i, j in scored:
                if value < floor and len(chosen) >= len(alive_list) // min_busy:
                    break
                if (
                    load[i] < params.pairs_per_round
                    and load[j] < params.pairs_per_round
                    and (i, j) not in chosen
                ):
                    chosen.append((i, j))
                    load[i] += 1
                    load[j] += 1
            requests = _requests(
                state, chosen, params=params, errors=errors, graph=graph, alive=alive, audit=audit
            )
            requests += _recheck_requests(state, params=params, errors=errors, graph=graph)
            return AdaptiveOpening(number=number, stage=1, requests=requests)
        final = True
    pairs = [(i, j) for x, i in enumerate(alive_list) for j in alive_list[x + 1 :] if askable(i, j)]
    once: list[Request] = []
    if params.one_vote_below_first and len(alive_list) <= params.k:
        # Every open candidate is in the top-k: only the pairs of two unbeaten candidates decide rank 1. The
        # others order ranks 2 to k, which a single vote orders right as often as the crowd is (a confirmed
        # pair there cost 2.4 votes at 10% reversals); a pair voted on before keeps its votes and is not asked.
        unbeaten = {i for i in alive_list if graph.above_count(i) == 0}
        below = [(i, j) for i, j in pairs if not (i in unbeaten and j in unbeaten)]
        pairs = [(i, j) for i, j in pairs if i in unbeaten and j in unbeaten]
        keys = [pair_key(state.candidates[i], state.candidates[j]) for i, j in below]
        once = [Request(pair=key, votes=1) for key in keys if not state.votes.get(key)]
    if not pairs and not once:
        return _verify_or_rank(state, number=number, params=params, errors=errors)
    requests = (
        _requests(state, pairs, params=params, errors=errors, graph=graph, alive=alive, audit=audit) + once
    )
    requests += _recheck_requests(state, params=params, errors=errors, graph=graph)
    return AdaptiveOpening(number=number, stage=2, requests=requests)


def only_losses(state: AdaptiveState) -> dict[str, Pair]:
    """Each candidate that lost exactly one confirmed pair, and that pair."""
    only: dict[str, Pair | None] = {}
    for key, winner in state.decided.items():
        if winner is not None:
            loser = key[1] if winner == key[0] else key[0]
            only[loser] = key if loser not in only else None
    return {loser: key for loser, key in only.items() if key is not None}


def lone_loss_rechecks(
    state: AdaptiveState, *, params: AdaptiveParams, errors: ErrorModel, graph: Graph | None = None
) -> list[Pair]:
    """The pairs that put a candidate out (k others above it) as its only direct loss, whose votes fall short of
    the decisive level (``decisive_limits``) and may still get more. Everything above such a candidate is above
    it through that one pair, so a single wrong vote majority put it out; asked again, to new workers, until the
    pair reaches the decisive level either way or ends as a tie (which lets the candidate back in)."""
    graph = graph or comparison_graph(state)
    index = {docid: i for i, docid in enumerate(state.candidates)}
    limit = decisive_limits(params, errors)[0]
    return sorted(
        key
        for loser, key in only_losses(state).items()
        if graph.above_count(index[loser]) >= params.k
        and short_of_decisive(state, key, state.decided[key] or "", params=params, errors=errors, limit=limit)
    )


def _recheck_requests(
    state: AdaptiveState, *, params: AdaptiveParams, errors: ErrorModel, graph: Graph
) -> list[Request]:
    """The requests of ``lone_loss_rechecks`` when ``params.recheck_lone_losses``: each as many votes as would
    reach the decisive level if they all agreed."""
    if not params.recheck_lone_losses:
        return []
    limits = decisive_limits(params, errors)
    return [
        Request(
            pair=key,
            votes=max(1, votes_wanted(state.votes[key], key, params=params, errors=errors, limits=limits)),
        )
        for key in lone_loss_rechecks(state, params=params, errors=errors, graph=graph)
    ]


def decisive_limits(params: AdaptiveParams, errors: ErrorModel) -> tuple[float, float]:
    """The log-likelihood ratio a decisive pair needs either way: log(c/(1-c)) at the risk 1-c cut to
    ELIMINATION_RISK of it; the plain log(c/(1-c)) when the crowd cannot reach that (``decisive_within_reach``)."""
    r = (1 - params.confidence) * (ELIMINATION_RISK if decisive_within_reach(params, errors) else 1.0)
    limit = math.log((1 - r) / r)
    return limit, limit


def decisive_within_reach(params: AdaptiveParams, errors: ErrorModel) -> bool:
    """Whether a pair can reach the decisive level at the crowd's estimated error rate with one vote against
    it and at most ``max_votes`` votes: its margin of agreeing votes plus two fits in ``max_votes`` (at the
    defaults, a rate up to about 0.146). Beyond that, nearly every pair held to the decisive level ends as a
    tie after its first dissent, so eliminations and the top-k's order stall and the topic ends at its budget
    ranked by vote shares; every pair is then confirmed at the plain level. On CAsT (seeds 0-4) this took
    the crowd erring 20% of the time from 21,776 judgments and tie-aware recall 0.902 to 15,537 and 0.921
    (the paper's procedure: 14,339 and 0.902) (docs/decisions.md "Adaptive mode")."""
    r = (1 - params.confidence) * ELIMINATION_RISK
    return math.log((1 - r) / r) <= (params.max_votes - 2) * errors.weight("") + 1e-9


def _verify_or_rank(
    state: AdaptiveState, *, number: int, params: AdaptiveParams, errors: ErrorModel
) -> AdaptiveOpening:
    """The topic's last rounds: the confirmed pairs between two items of its top-k (``weak_top_pairs``) and
    those that put the first candidates out (``weak_boundary_pairs``) that fall short of the decisive level
    are asked again; once none is, the final ranking."""
    ranked = adaptive_rank(state, k=params.k, by_majorities=params.rank_by_majorities)
    top = [item.docid for item in ranked]
    first = ({item.docid for item in ranked if item.rank == 1} | {ranked[0].docid}) if ranked else set()
    at_crowd_rate = first if params.verify_first_at_crowd_rate else set()
    weak = weak_top_pairs(state, top, params=params, errors=errors, at_crowd_rate=at_crowd_rate)
    if not params.verify_every_top_pair:
        lone = set(only_losses(state).values())
        weak = [key for key in weak if key[0] in first or key[1] in first or key in lone]
    weak += weak_boundary_pairs(state, top, params=params, errors=errors, at_crowd_rate=at_crowd_rate)
    split = split_best_pairs(state, ranked, params=params) if params.break_best_ties else []
    if not weak and not split:
        return AdaptiveOpening(number=number, stage=2, requests=[], ranked=ranked)
    limits = decisive_limits(params, errors)
    requests = [
        Request(
            pair=key,
            votes=max(1, votes_wanted(state.votes[key], key, params=params, errors=errors, limits=limits)),
        )
        for key in weak
    ] + [Request(pair=key, votes=1) for key in split]
    return AdaptiveOpening(number=number, stage=2, requests=requests)


def split_best_pairs(
    state: AdaptiveState, ranked: Sequence[RankedItem], *, params: AdaptiveParams
) -> list[Pair]:
    """The pairs between the candidates ranked first (every one at rank 1, or the first two of ``ranked``) that
    ended as a tie with their votes split evenly and fewer than ``max_votes`` of them: one more vote gives the
    pair a majority, which ``adaptive_rank`` reads as the pair's score. Under reversals that do not depend on the
    items only the votes on this pair tell the best from the runner-up, and a majority of more votes is right
    more often (``agreement.best_first_ceiling``); a 2-2 split left as it is ranks the two by their other pairs."""
    if len(ranked) < 2:
        return []
    first = [item.docid for item in ranked if item.rank == 1]
    if len(first) < 2:
        first = [ranked[0].docid, ranked[1].docid]
    split = []
    for x, a in enumerate(first):
        for b in first[x + 1 :]:
            key = pair_key(a, b)
            votes = state.votes.get(key, ())
            if key not in state.decided or state.decided[key] is not None or len(votes) >= params.max_votes:
                continue
            if 2 * sum(1 for winner, _ in votes if winner == key[0]) == len(votes):
                split.append(key)
    return split


def weak_boundary_pairs(
    state: AdaptiveState,
    top: Sequence[str],
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    at_crowd_rate: Collection[str] = (),
) -> list[Pair]:
    """The confirmed pairs in which an item of ``top`` beat a candidate that has exactly k others above it
    (the first candidates out, at the k-th/(k+1)-th boundary) whose votes fall short of the decisive level and
    may still get more. Should one end as a tie or reversed, its loser is open again and the all-pairs stage
    takes it in. A pair with an item of ``at_crowd_rate`` counts no vote above the crowd's (``short_of_decisive``).
    With ``params.verify_next_out`` the winner may be any candidate, and a loser with k+1 others above it that
    has won a confirmed pair is taken in too (``_near_boundary``)."""
    limits = decisive_limits(params, errors)
    graph = comparison_graph(state)
    index = {docid: i for i, docid in enumerate(state.candidates)}
    members = set(top)
    winners = {winner for winner in state.decided.values() if winner is not None}
    weak = []
    for key, winner in sorted(state.decided.items()):
        if winner is None:
            continue
        loser = key[1] if winner == key[0] else key[0]
        if loser in members or not _near_boundary(
            above=graph.above_count(index[loser]),
            winner_in_top=winner in members,
            loser_won=loser in winners,
            params=params,
        ):
            continue
        crowd_rate = key[0] in at_crowd_rate or key[1] in at_crowd_rate
        if short_of_decisive(
            state, key, winner, params=params, errors=errors, limit=limits[0], crowd_rate=crowd_rate
        ) and (not params.verify_load_bearing_only or _keeps_out(state, key, loser, k=params.k)):
            weak.append(key)
    return weak


def _near_boundary(*, above: int, winner_in_top: bool, loser_won: bool, params: AdaptiveParams) -> bool:
    """Whether a confirmed loss of a candidate out of the top-k, with ``above`` others above it, is one the boundary's
    verification looks at: a loss to an item of the top-k of one of the first candidates out (exactly k above); with
    ``params.verify_next_out`` a loss to any candidate, of those and of the candidates one further out that have won
    a pair. A true top-k item put out by one wrong loss to a candidate that is itself out has at least k+1 others
    above it, so the first boundary never sees it: under 10% reversals at 14,000 judgments 85 of the 193 true top-5
    items lost had such a loss, most of them a 2-0 pair. A candidate that has won nothing is seldom one of them, and
    leaving those out halves the rule's cost. On CAsT with 10% reversals at 14,000 (seeds 10-29) tie-aware recall
    went from 0.989 to 0.990 for 106 more judgments a run, on seeds 0-9 to 0.991, and on the benchmark's seeds 0-4
    to 0.992 with best first 171.4 (docs/decisions.md "Closure rounds at a budget: the candidates one further out")."""
    if above == params.k:
        return winner_in_top or params.verify_next_out
    return params.verify_next_out and above == params.k + 1 and loser_won


def _keeps_out(state: AdaptiveState, key: Pair, loser: str, *, k: int) -> bool:
    """Whether the confirmed pair ``key`` is one the out candidate ``loser`` needs to stay out: with the pair a
    tie it would have fewer than k others above it."""
    untied = replace(state, decided={**state.decided, key: None})
    return comparison_graph(untied).above_count(state.candidates.index(loser)) < k


def weak_top_pairs(
    state: AdaptiveState,
    top: Sequence[str],
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    at_crowd_rate: Collection[str] = (),
) -> list[Pair]:
    """The confirmed pairs between two items of ``top`` whose votes fall short of the decisive level
    (``decisive_limits``) and may still get more: the pairs that order the final top-k. A pair with an item of
    ``at_crowd_rate`` counts no vote above the crowd's (``short_of_decisive``)."""
    limits = decisive_limits(params, errors)
    weak = []
    for x, a in enumerate(top):
        for b in top[x + 1 :]:
            key = pair_key(a, b)
            winner = state.decided.get(key)
            crowd_rate = a in at_crowd_rate or b in at_crowd_rate
            if winner is not None and short_of_decisive(
                state, key, winner, params=params, errors=errors, limit=limits[0], crowd_rate=crowd_rate
            ):
                weak.append(key)
    return weak


def short_of_decisive(
    state: AdaptiveState,
    key: Pair,
    winner: str,
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    limit: float,
    crowd_rate: bool = False,
) -> bool:
    """Whether the confirmed pair ``key`` (won by ``winner``) may still get votes and its votes' log-likelihood
    ratio for ``winner`` falls short of ``limit``: a pair to verify before the topic ends. With ``crowd_rate`` no
    vote weighs more than one of the crowd's rate, so two votes of workers whose records look better than the
    crowd's do not settle it."""
    votes = state.votes.get(key, ())
    if len(votes) >= params.max_votes:
        return False
    if crowd_rate:
        cap = errors.weight("")
        ratio = sum(min(cap, errors.weight(worker)) * (1 if w == key[0] else -1) for w, worker in votes)
    else:
        ratio = llr(votes, key, errors)
    return (ratio if winner == key[0] else -ratio) < limit - 1e-9


def _requests(
    state: AdaptiveState,
    chosen: Sequence[tuple[int, int]],
    *,
    params: AdaptiveParams,
    errors: ErrorModel,
    graph: Graph,
    alive: int,
    audit: random.Random,
) -> list[Request]:
    requests = []
    # The second round's audits look for errors the first round's did not reveal; when neither the
    # challenges nor the first audits showed a single error (every estimate still at or under the prior's), a
    # clean crowd is taken as clean and the second round is not audited (on CAsT with a perfect judge about 60
    # judgments a run). A crowd that erred anywhere keeps both audit rounds.
    audit_rounds = AUDIT_ROUNDS if error_seen(errors) else 1
    for i, j in sorted(chosen):
        key = pair_key(state.candidates[i], state.candidates[j])
        votes = state.votes.get(key, ())
        limits = thresholds(graph, key, params=params, alive=alive, errors=errors)
        wanted = max(1, votes_wanted(votes, key, params=params, errors=errors, limits=limits))
        if not votes and state.rounds < audit_rounds and audit.random() < AUDIT_SHARE:
            wanted = max(wanted, min(2, params.max_votes))
        requests.append(Request(pair=key, votes=wanted))
    return requests


def error_seen(errors: ErrorModel) -> bool:
    """Whether the estimate shows any observed error: a crowd rate above the prior's, or a worker estimated
    above the crowd (with no error seen, a worker's estimate is the crowd's shrunk toward zero)."""
    return errors.rate > PRIOR_ERRORS / PRIOR_ANSWERS or any(
        rate > errors.rate for rate in errors.per_worker.values()
    )


def adaptive_round_close(
    state: AdaptiveState,
    *,
    number: int,
    stage: int,
    votes: Iterable[tuple[str, str, str, str]],
    params: AdaptiveParams,
    errors: ErrorModel,
) -> AdaptiveState:
    """Close round ``number`` with its votes ``(a, b, winner, worker)``: add them to their pairs and decide
    every pair the sequential test now settles. A confirmed pair gets votes only in a verification round
    (stage 2, ``weak_top_pairs``) or, with ``params.recheck_lone_losses``, as a candidate's only direct loss
    (``lone_loss_rechecks``), and is then decided again at the decisive level (``decisive_limits``); a
    tied pair only in stage 2 with ``params.break_best_ties`` (``split_best_pairs``), and stays a tie.
    Raises ``ValueError`` on a vote for a pair that is not between two candidates, a winner outside the pair,
    a tied pair (but for that case) or a pair confirmed before stage 2, or a second vote of one worker on one
    pair."""
    members = set(state.candidates)
    all_votes = dict(state.votes)
    touched = set()
    # A lone loss asked again in a selection round (``lone_loss_rechecks``); which pairs qualify does not depend on
    # the error estimate, which may have moved since the round opened.
    rechecked = set(only_losses(state).values()) if params.recheck_lone_losses else set()
    for a, b, winner, worker in votes:
        key = pair_key(a, b)
        if a not in members or b not in members or a == b:
            raise ValueError(f"vote on ({a}, {b}) is not between two candidates of topic {state.topic}")
        if winner not in key:
            raise ValueError(f"winner {winner} is not in the pair ({a}, {b})")
        if key in state.decided and (
            (stage != 2 and key not in rechecked)
            or (state.decided[key] is None and not params.break_best_ties)
        ):
            raise ValueError(f"pair ({a}, {b}) is already decided")
        previous = all_votes.get(key, ())
        if any(w == worker for _, w in previous):
            raise ValueError(f"worker {worker} already judged ({a}, {b})")
        all_votes[key] = (*previous, (winner, worker))
        touched.add(key)
    decided = dict(state.decided)
    # Stakes are judged on the graph the round was planned on, so the order of decisions within it is moot.
    graph = comparison_graph(state)
    alive = sum(1 << i for i in range(len(state.candidates)) if graph.above_count(i) < params.k)
    for key in sorted(touched):
        if key in state.decided and state.decided[key] is None:
            continue  # a tie's deciding vote (``split_best_pairs``) counts in its share, the pair stays a tie
        verifying = key in state.decided
        if verifying:
            limits = decisive_limits(params, errors)
        else:
            limits = thresholds(graph, key, params=params, alive=alive, errors=errors)
        verdict = decide(all_votes[key], key, params=params, errors=errors, limits=limits)
        if verdict is not False:
            decided[key] = verdict  # type: ignore[assignment]
    return AdaptiveState(
        topic=state.topic,
        candidates=state.candidates,
        rounds=number,
        votes=all_votes,
        decided=decided,
        final_stage=state.final_stage or stage == 2,
    )


def adaptive_rank(state: AdaptiveState, *, k: int, by_majorities: bool = False) -> list[RankedItem]:
    """The final top-k of a topic, as the paper's stage 2 ranks its pool: the open candidates by their score
    against the others open, competition ranks, every item tied at rank k kept. A pair ordered through
    confirmed chains scores 1 for its winner; a pair that ended as a tie gives each side its share of the
    pair's votes (the best evidence there is on a near tie), an unjudged one half. ``wins`` counts the pairs
    an item won (ordered, or led on votes). With ``by_majorities`` the candidates are ranked first by their
    majorities (a pair ordered or led on votes 1, an even or unjudged one half), then by that score: a 3-2
    majority on a near tie then counts as much as a confirmed pair, so the item that led its pair with the
    runner-up is not put behind it by a vote share elsewhere (on CAsT with 10% reversals at a budget, about
    0.7 best items a run)."""
    graph = comparison_graph(state)
    alive = [i for i in range(len(state.candidates)) if graph.above_count(i) < k]
    score: dict[int, tuple[float, float]] = {}
    wins: dict[int, int] = {}
    for i in alive:
        total, won, majorities = 0.0, 0, 0.0
        for j in alive:
            if i == j:
                continue
            i_over = graph.below[i] >> j & 1
            j_over = graph.below[j] >> i & 1
            if i_over != j_over:
                share = float(i_over)
            else:
                key = pair_key(state.candidates[i], state.candidates[j])
                votes = state.votes.get(key, ())
                share = sum(1 for w, _ in votes if w == state.candidates[i]) / len(votes) if votes else 0.5
            total += share
            won += share > 0.5
            majorities += 1.0 if share > 0.5 else 0.5 if share == 0.5 else 0.0
        score[i] = (majorities if by_majorities else 0.0, round(total, 9))
        wins[i] = won
    order = sorted(alive, key=lambda i: (-score[i][0], -score[i][1], state.candidates[i]))
    ranked = []
    for i in order:
        rank = 1 + sum(1 for j in alive if score[j] > score[i])
        if rank > k:
            break
        ranked.append(RankedItem(docid=state.candidates[i], rank=rank, wins=wins[i]))
    return ranked


@dataclass
class ErrorEvidence:
    """What the error estimate learns from: challenge answers and votes, per worker."""

    challenges: dict[str, list[int]] = field(default_factory=dict)  # worker -> [answers, failures]

    def challenge(self, worker: str, *, failed: bool) -> None:
        counts = self.challenges.setdefault(worker, [0, 0])
        counts[0] += 1
        counts[1] += int(failed)


def vote_evidence(state: AdaptiveState) -> dict[str, Any]:
    """What one topic's votes tell ``error_estimate``, as plain JSON values: ``pair_errors`` (minority votes of
    pairs voted more than once), ``pair_answers`` (the votes of those pairs) and ``workers`` (worker ->
    [votes on decided pairs, votes against their winners])."""
    pair_errors = pair_answers = 0
    workers: dict[str, list[int]] = {}
    for key, votes in state.votes.items():
        if len(votes) >= 2:
            first = sum(1 for winner, _ in votes if winner == key[0])
            pair_errors += min(first, len(votes) - first)
            pair_answers += len(votes)
        winner = state.decided.get(key)
        if winner:
            for vote_winner, worker in votes:
                counts = workers.setdefault(worker, [0, 0])
                counts[0] += 1
                counts[1] += vote_winner != winner
    return {"pair_errors": pair_errors, "pair_answers": pair_answers, "workers": workers}


def error_estimate(evidence: ErrorEvidence, states: Iterable[AdaptiveState]) -> ErrorModel:
    """The crowd's error rate and each worker's, from challenge failures and disagreement on repeated pairs.

    Crowd rate: the larger of (challenge failures + PRIOR_ERRORS) / (challenges + PRIOR_ANSWERS) and (minority
    votes of pairs voted more than once + PRIOR_ERRORS) / (votes of those pairs + PRIOR_ANSWERS); a minority
    vote of a repeated pair is a vote against its majority (for two votes its expected share is e(1-e)). A worker's rate
    counts its own challenge failures and its votes against decided pairs' winners, shrunk toward the crowd's
    rate with the weight of WORKER_SHRINKAGE answers (Chen et al., "Pairwise ranking aggregation in a
    crowdsourced setting", WSDM 2013, model each worker's reliability), once the workers differ beyond chance
    (``workers_differ``); until then every worker is read at the crowd's rate (``per_worker`` empty)."""
    return error_estimate_from_votes(evidence, (vote_evidence(state) for state in states))


def error_estimate_from_votes(evidence: ErrorEvidence, topics: Iterable[Mapping[str, Any]]) -> ErrorModel:
    """``error_estimate`` from each topic's ``vote_evidence`` (as stored in its ``to_json``): the same numbers,
    every count being a whole number."""
    errors = pair_errors = PRIOR_ERRORS
    answers = pair_answers = PRIOR_ANSWERS
    per_worker: dict[str, list[float]] = {}
    for worker, (n, failed) in evidence.challenges.items():
        errors += failed
        answers += n
        per_worker.setdefault(worker, [0.0, 0.0])
        per_worker[worker][0] += n
        per_worker[worker][1] += failed
    for topic in topics:
        pair_errors += topic["pair_errors"]
        pair_answers += topic["pair_answers"]
        for worker, (n, failed) in topic["workers"].items():
            counts = per_worker.setdefault(worker, [0.0, 0.0])
            counts[0] += n
            counts[1] += failed
    # Challenges pit a candidate against a non-relevant item, easier than most pairs: the larger of the two
    # estimates is the one pairs are judged with.
    rate = max(errors / answers, pair_errors / pair_answers)
    if not workers_differ(per_worker.values()):
        return ErrorModel(rate=rate)
    workers = {
        worker: (failed + WORKER_SHRINKAGE * rate) / (n + WORKER_SHRINKAGE)
        for worker, (n, failed) in per_worker.items()
        if n > 0
    }
    return ErrorModel(rate=rate, per_worker=workers)


def workers_differ(counts: Iterable[Sequence[float]]) -> bool:
    """Whether workers' error rates (``counts``: [answers, errors] per worker) differ beyond binomial chance:
    Pearson's chi-square test of homogeneity rejects at WORKER_HOMOGENEITY_LEVEL. Fewer than two workers with
    answers, or no error or nothing but errors seen, cannot differ."""
    # scipy.special, not scipy.stats: the campaign pages read the error estimate, and scipy.stats takes three
    # times as long to load (0.57 s against 0.17 s), so it is loaded on first use only.
    from scipy.special import chdtrc

    rows = [(n, failed) for n, failed in counts if n > 0]
    answers = sum(n for n, _ in rows)
    mean = sum(failed for _, failed in rows) / answers if answers else 0.0
    if len(rows) < 2 or not 0 < mean < 1:
        return False
    statistic = sum((failed - n * mean) ** 2 / (n * mean * (1 - mean)) for n, failed in rows)
    return bool(chdtrc(len(rows) - 1, statistic) < WORKER_HOMOGENEITY_LEVEL)


def assign_workers(
    queue: Sequence[tuple[str, Pair]], judged: Mapping[tuple[str, Pair], set[str]], workers: Sequence[str]
) -> str | None:
    """The first of ``workers`` that judged none of the pairs of ``queue`` (topic, pair); None if all did."""
    for worker in workers:
        if all(worker not in judged.get(item, ()) for item in queue):
            return worker
    return None


def shuffled_workers(rng: random.Random, workers: Sequence[str]) -> list[str]:
    out = list(workers)
    rng.shuffle(out)
    return out
