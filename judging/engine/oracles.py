"""Simulated assessors: answer ``prefer(topic, a, b)`` from preference values or a judgment log."""

from __future__ import annotations

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

    Two error models (give exactly one):
    - ``error_rate=e``: every judgment is reversed with probability e, whatever the items (the
      "random flips" judge of Rashidi, Zobel and Moffat, "The Impact of Judgment Variability on the Consistency of Offline Effectiveness Measures",
      moved from binary labels to preferences).
    - ``discriminability=d``: the signal-detection form of the same paper (disc = z(TPR) - z(FPR),
      after Li and Smucker) read as a Thurstone comparison: each item is perceived at its level plus
      N(0, 1/d^2) noise, so a pair whose levels differ by ``gap`` is reversed with probability
      Phi(-d * gap / sqrt(2)). Equal levels (gap 0) are a coin flip; distant levels are rarely
      confused. Levels are the ranks of the topic's distinct positive values (1 = lowest positive
      level, values <= 0 or missing are level 0), so the coding of values (4 vs 50) does not matter.
    Randomness comes from ``rng``; the same seed and call sequence give the same answers.
    """

    def __init__(
        self,
        values: Mapping[str, Mapping[str, float]],
        *,
        rng: random.Random,
        error_rate: float | None = None,
        discriminability: float | None = None,
    ) -> None:
        if (error_rate is None) == (discriminability is None):
            raise ValueError("give exactly one of error_rate and discriminability")
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
        assert self.discriminability is not None  # exactly one model is given (checked on creation)
        levels = self._levels.get(topic_id, {})
        gap = abs(levels.get(a, 0) - levels.get(b, 0))
        return NormalDist().cdf(-self.discriminability * gap / 2**0.5)

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        winner = self._perfect.prefer(topic_id, a, b)
        if self._rng.random() < self.error_probability(topic_id, a, b):
            return b if winner == a else a
        return winner


class ReplayOracle:
    """An assessor that repeats logged judgments (e.g. ``judgments.crowd.txt``).

    A pair judged several times in the log (pairs recur across rounds) is answered with its logged
    winners in log order, and with the last one once they are used up. A pair the log never judged
    goes to ``fallback`` (``KeyError`` if there is none). ``replayed`` and ``fallen_back`` count the
    answers of each kind.
    """

    def __init__(self, log: str | Path | Iterable[JudgmentRecord], fallback: Oracle | None = None) -> None:
        records = read_judgment_log(log) if isinstance(log, (str, Path)) else list(log)
        self._answers: dict[tuple[str, frozenset[str]], deque[str]] = defaultdict(deque)
        for record in records:
            self._answers[(record.topic, frozenset((record.winner, record.loser)))].append(record.winner)
        self._fallback = fallback
        self.replayed = 0
        self.fallen_back = 0

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        answers = self._answers.get((topic_id, frozenset((a, b))))
        if answers:
            self.replayed += 1
            return answers.popleft() if len(answers) > 1 else answers[0]
        if self._fallback is None:
            raise KeyError(
                f"the judgment log has no judgment of ({a}, {b}) for topic {topic_id} and there is no fallback"
            )
        self.fallen_back += 1
        return self._fallback.prefer(topic_id, a, b)
