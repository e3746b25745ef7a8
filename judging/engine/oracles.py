"""Simulated assessors: answer ``prefer(topic, a, b)`` from preference values or a judgment log."""

from __future__ import annotations

import math
import random
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import NormalDist
from typing import Protocol

from judging.engine.judgment_log import JudgmentRecord, read_judgment_log


class Oracle(Protocol):
    """Anything that answers a forced-choice preference between two items of a topic."""

    def prefer(self, topic_id: str, a: str, b: str) -> str: ...


class PerfectOracle:
    """A consistent assessor that knows the preference values (e.g. a preference qrels file):
    the higher value wins; on equal values the smaller docid wins, so its answers follow one strict
    total order per topic. Items missing from ``values`` have value 0 (L_0)."""

    def __init__(self, values: Mapping[str, Mapping[str, float]]) -> None:
        self.values = values

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        topic = self.values.get(topic_id, {})
        va, vb = topic.get(a, 0.0), topic.get(b, 0.0)
        if va != vb:
            return a if va > vb else b
        return min(a, b)

    def ranking(self, topic_id: str, items: Iterable[str]) -> list[str]:
        """``items`` in this oracle's order, best first."""
        topic = self.values.get(topic_id, {})
        return sorted(items, key=lambda d: (-topic.get(d, 0.0), d))


class NoisyOracle:
    """An assessor that errs: it answers like ``PerfectOracle`` and then reverses the answer with an
    error probability.

    Three error models (give exactly one):
    - ``error_rate=e``: every judgment is reversed with probability e, whatever the items (the
      "random flips" judge of Rashidi, Zobel and Moffat, "The Impact of Judgment Variability on the Consistency of Offline Effectiveness Measures",
      moved from binary labels to preferences).
    - ``discriminability=d``: the signal-detection form of the same paper (disc = z(TPR) - z(FPR),
      after Li and Smucker) read as a Thurstone comparison: each item is perceived at its level plus
      N(0, 1/d^2) noise, so a pair whose levels differ by ``gap`` is reversed with probability
      Phi(-d * gap / sqrt(2)). Equal levels (gap 0) are a coin flip; distant levels are rarely
      confused. Levels are the ranks of the topic's distinct positive values (1 = lowest positive
      level, values <= 0 or missing are level 0), so the coding of values (4 vs 50) does not matter.
    - ``reversal_by_gap={gap: p}``: the probability of a reversal for each level gap, as measured on a real
      crowd's log by ``fit_reversal_by_gap`` (a gap the table lacks takes the nearest smaller gap's value, or
      the smallest gap's).
    Randomness comes from ``rng``; the same seed and call sequence give the same answers.
    """

    def __init__(
        self,
        values: Mapping[str, Mapping[str, float]],
        *,
        rng: random.Random,
        error_rate: float | None = None,
        discriminability: float | None = None,
        reversal_by_gap: Mapping[int, float] | None = None,
    ) -> None:
        if sum(model is not None for model in (error_rate, discriminability, reversal_by_gap)) != 1:
            raise ValueError("give exactly one of error_rate, discriminability and reversal_by_gap")
        if reversal_by_gap is not None and (
            not reversal_by_gap or any(not 0.0 <= p <= 1.0 for p in reversal_by_gap.values())
        ):
            raise ValueError("reversal_by_gap needs at least one gap, each probability in [0, 1]")
        self.reversal_by_gap = dict(sorted(reversal_by_gap.items())) if reversal_by_gap is not None else None
        if error_rate is not None and not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"error_rate must be in [0, 1] (got {error_rate})")
        if discriminability is not None and discriminability <= 0:
            raise ValueError(f"discriminability must be positive (got {discriminability})")
        self._perfect = PerfectOracle(values)
        self._rng = rng
        self.error_rate = error_rate
        self.discriminability = discriminability
        self._levels: dict[str, dict[str, int]] = {}
        for topic_id, topic in values.items():
            distinct = sorted({v for v in topic.values() if v > 0})
            level_of = {v: i + 1 for i, v in enumerate(distinct)}
            self._levels[topic_id] = {d: level_of.get(v, 0) for d, v in topic.items()}

    def error_probability(self, topic_id: str, a: str, b: str) -> float:
        """The probability that this oracle reverses the consistent answer for the pair."""
        if self.error_rate is not None:
            return self.error_rate
        levels = self._levels.get(topic_id, {})
        gap = abs(levels.get(a, 0) - levels.get(b, 0))
        if self.reversal_by_gap is not None:
            known = [g for g in self.reversal_by_gap if g <= gap]
            return self.reversal_by_gap[known[-1] if known else next(iter(self.reversal_by_gap))]
        assert self.discriminability is not None  # exactly one model is given (checked on creation)
        return NormalDist().cdf(-self.discriminability * gap / 2**0.5)

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        winner = self._perfect.prefer(topic_id, a, b)
        if self._rng.random() < self.error_probability(topic_id, a, b):
            return b if winner == a else a
        return winner


def fit_reversal_by_gap(
    records: Iterable[JudgmentRecord], values: Mapping[str, Mapping[str, float]]
) -> dict[int, dict[str, float]]:
    """Measure, on a judgment log, how often a judge reverses the order of ``values`` (the preference levels
    of ``NoisyOracle``), by the pair's difference of level: ``{gap: {"judgments": n, "reversals": r,
    "p": (r + 0.5) / (n + 1)}}``. At gap 0 the two items share a level and the "right" answer is the
    ``PerfectOracle`` tie-break (the smaller docid), so p near 0.5 is what a crowd without a preference gives.
    Judgments of topics missing from ``values`` are skipped."""
    perfect = PerfectOracle(values)
    levels_of = NoisyOracle(values, rng=random.Random(0), error_rate=0.0)._levels
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if record.topic not in values:
            continue
        levels = levels_of.get(record.topic, {})
        gap = abs(levels.get(record.winner, 0) - levels.get(record.loser, 0))
        counts[gap][0] += 1
        counts[gap][1] += perfect.prefer(record.topic, record.winner, record.loser) != record.winner
    return {
        gap: {"judgments": n, "reversals": r, "p": (r + 0.5) / (n + 1)}
        for gap, (n, r) in sorted(counts.items())
    }


class ItemScoreOracle:
    """A crowd of one model (the "item-score world", docs/judge-model.md): in a topic, each item has a score,
    and a judge prefers a over b with probability 1/2 + eta (sigma(s_a - s_b) - 1/2) (Bradley-Terry with the
    Crowd-BT reliability eta of ``judges.py``). An item without a score (a non-relevant challenge item) loses to
    any scored one whenever the judge follows the model. ``truth`` is the world's own order: a
    ``PerfectOracle`` over the scores, against which a campaign is scored."""

    def __init__(
        self, scores: Mapping[str, Mapping[str, float]], *, rng: random.Random, reliability: float = 1.0
    ) -> None:
        if not 0.0 <= reliability <= 1.0:
            raise ValueError(f"reliability must be in [0, 1] (got {reliability})")
        self.scores = scores
        self.reliability = reliability
        self._rng = rng
        self.truth = PerfectOracle(scores)

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        topic = self.scores.get(topic_id, {})
        if a in topic and b in topic:
            p = 1.0 / (1.0 + math.exp(-(topic[a] - topic[b])))
        else:
            p = 0.5 if a not in topic and b not in topic else 1.0 if a in topic else 0.0
        return a if self._rng.random() < 0.5 + self.reliability * (p - 0.5) else b


class ReplayOracle:
    """An assessor that repeats logged judgments (e.g. ``judgments.crowd.txt``).

    A pair judged several times in the log (pairs recur across rounds) is answered with its logged
    winners in log order, in either order of the pair, and with the last one once they are used up; with
    ``reuse_last=False`` (``toppref simulate --judge-log``) each logged vote answers once, so a pair asked
    more often than the log judged it gets the fallback's answers after its real ones. A pair the log never
    judged goes to ``fallback`` (``KeyError`` if there is none). ``replayed`` and ``fallen_back`` count the
    answers of each kind.
    """

    def __init__(
        self,
        log: str | Path | Iterable[JudgmentRecord],
        fallback: Oracle | None = None,
        *,
        reuse_last: bool = True,
    ) -> None:
        records = read_judgment_log(log) if isinstance(log, (str, Path)) else list(log)
        self._answers: dict[tuple[str, frozenset[str]], deque[str]] = defaultdict(deque)
        for record in records:
            self._answers[(record.topic, frozenset((record.winner, record.loser)))].append(record.winner)
        self._fallback = fallback
        self._keep = 1 if reuse_last else 0
        self.replayed = 0
        self.fallen_back = 0

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        answers = self._answers.get((topic_id, frozenset((a, b))))
        if answers:
            self.replayed += 1
            return answers.popleft() if len(answers) > self._keep else answers[0]
        if self._fallback is None:
            raise KeyError(
                f"the judgment log has no judgment of ({a}, {b}) for topic {topic_id} and there is no fallback"
            )
        self.fallen_back += 1
        return self._fallback.prefer(topic_id, a, b)
