"""How often two judges (two logs of pairwise votes: people, a model, two crowds) agree on the pairs both judged:
raw agreement, Cohen's kappa, their ties, and the same by the pair's NIST grade gap. ``toppref agreement`` prints
it; a campaign's page can show it for its model and its people, from the same function.

The rules (docs/agreement.md):

- A pair is unordered: (topic, {x, y}), whatever order each log wrote it in. Each vote is one of three labels:
  x wins, y wins (x the smaller docid, an order with no bearing on quality, so neither judge's position bias
  enters the labels), or a tie.
- A pair both logs judged counts once, however many votes each log has on it: its n_a votes in A and n_b in B
  make n_a * n_b combinations, each weighing 1 / (n_a * n_b). ``agreement`` is then the probability that a
  vote of A and a vote of B on a shared pair, both drawn at random, carry the same label (a tie agrees only
  with a tie); for logs of one vote per pair it is the plain share of pairs with the same answer, and a log
  that repeats one answer on every line of a pair weighs as much as one that writes it once.
- ``kappa`` is Cohen's ("A coefficient of agreement for nominal scales", 1960) over that weighted 3 x 3 table:
  (p_o - p_e) / (1 - p_e), p_e from the two logs' label shares; ``None`` when p_e is 1 (both logs give one
  label only) or no pair is shared.
- ``agreement_decisive`` is ``agreement`` over the combinations where both votes are decisive (how often a
  decisive model answer matches a human vote, the figure Arabzadeh and Clarke, "Benchmarking LLM-based
  Relevance Judgment Methods", report for preference judgments).
- ``ties_a`` and ``ties_b`` count the tie votes of each log on the shared pairs (of ``votes_a``, ``votes_b``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judging.engine.judgment_log import Vote

# Labels of a vote on a pair written (smaller docid, larger docid).
FIRST, SECOND, TIE = 0, 1, 2
PairKey = tuple[str, str, str]  # (topic, smaller docid, larger docid)
UNJUDGED = "unjudged"


def pair_key(topic: str, a: str, b: str) -> PairKey:
    """The unordered pair's key: the topic and the two docids in ascending order."""
    return (topic, a, b) if a < b else (topic, b, a)


def votes_by_pair(votes: Iterable[Vote]) -> dict[PairKey, list[int]]:
    """Each pair's labels (``FIRST``, ``SECOND``, ``TIE``), in log order."""
    labels: dict[PairKey, list[int]] = defaultdict(list)
    for vote in votes:
        key = pair_key(vote.topic, vote.a, vote.b)
        labels[key].append(TIE if vote.winner is None else FIRST if vote.winner == key[1] else SECOND)
    return dict(labels)


@dataclass(frozen=True)
class Agreement:
    """Agreement of logs A and B on ``pairs`` shared pairs (module docstring); ``None`` where undefined.
    ``a_follows_grades``/``b_follows_grades``: for pairs of different grades, the share of each log's decisive
    votes (weighed 1 / n per pair) that prefer the higher-graded item."""

    pairs: int
    votes_a: int
    votes_b: int
    ties_a: int
    ties_b: int
    agreement: float | None
    agreement_decisive: float | None
    kappa: float | None
    a_follows_grades: float | None = None
    b_follows_grades: float | None = None

    def as_dict(self, digits: int = 6) -> dict[str, Any]:
        """The JSON form (floats rounded to ``digits``); the grade-following shares only where defined."""
        row: dict[str, Any] = {
            "pairs": self.pairs,
            "votes_a": self.votes_a,
            "votes_b": self.votes_b,
            "agreement": _round(self.agreement, digits),
            "agreement_decisive": _round(self.agreement_decisive, digits),
            "kappa": _round(self.kappa, digits),
            "ties_a": self.ties_a,
            "ties_b": self.ties_b,
        }
        if self.a_follows_grades is not None or self.b_follows_grades is not None:
            row["a_follows_grades"] = _round(self.a_follows_grades, digits)
            row["b_follows_grades"] = _round(self.b_follows_grades, digits)
        return row


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def vote_agreement(
    labels_a: Mapping[PairKey, Sequence[int]],
    labels_b: Mapping[PairKey, Sequence[int]],
    *,
    higher: Mapping[PairKey, int] | None = None,
) -> Agreement:
    """Agreement of two logs' labels (``votes_by_pair``) on the pairs both hold (module docstring).
    ``higher`` (optional) gives, for pairs of different grades, the label of the higher-graded item."""
    table = [[0.0] * 3 for _ in range(3)]
    pairs = votes_a = votes_b = ties_a = ties_b = 0
    # Per log: the summed share of decisive votes preferring the higher grade, and the pairs it sums over.
    follow_share = {"a": 0.0, "b": 0.0}
    follow_pairs = {"a": 0, "b": 0}
    for key in labels_a.keys() & labels_b.keys():
        a, b = labels_a[key], labels_b[key]
        if not a or not b:
            continue
        pairs += 1
        votes_a, votes_b = votes_a + len(a), votes_b + len(b)
        ties_a, ties_b = ties_a + a.count(TIE), ties_b + b.count(TIE)
        weight = 1.0 / (len(a) * len(b))
        for label_a in a:
            for label_b in b:
                table[label_a][label_b] += weight
        if higher is not None and key in higher:
            for side, labels in (("a", a), ("b", b)):
                decisive = [label for label in labels if label != TIE]
                if decisive:
                    follow_share[side] += decisive.count(higher[key]) / len(decisive)
                    follow_pairs[side] += 1
    if not pairs:
        return Agreement(0, 0, 0, 0, 0, None, None, None)
    observed = sum(table[label][label] for label in range(3)) / pairs
    rows = [sum(table[label]) / pairs for label in range(3)]
    columns = [sum(table[other][label] for other in range(3)) / pairs for label in range(3)]
    chance = sum(row * column for row, column in zip(rows, columns, strict=True))
    both_decisive = sum(table[i][j] for i in (FIRST, SECOND) for j in (FIRST, SECOND))
    return Agreement(
        pairs=pairs,
        votes_a=votes_a,
        votes_b=votes_b,
        ties_a=ties_a,
        ties_b=ties_b,
        agreement=observed,
        agreement_decisive=(table[FIRST][FIRST] + table[SECOND][SECOND]) / both_decisive
        if both_decisive
        else None,
        # A chance agreement of 1 (both logs give one label only) leaves kappa undefined, not 0 or 1.
        kappa=(observed - chance) / (1.0 - chance) if chance < 1.0 - 1e-12 else None,
        a_follows_grades=follow_share["a"] / follow_pairs["a"] if follow_pairs["a"] else None,
        b_follows_grades=follow_share["b"] / follow_pairs["b"] if follow_pairs["b"] else None,
    )


def grade_gap(grades: Mapping[str, Mapping[str, float]], key: PairKey) -> str:
    """The pair's grade gap as a JSON key: ``"0"``, ``"1"``... (``"0.5"`` for fractional grades), or
    ``"unjudged"`` when either item has no grade for the topic."""
    topic = grades.get(key[0], {})
    if key[1] not in topic or key[2] not in topic:
        return UNJUDGED
    gap = abs(topic[key[1]] - topic[key[2]])
    return str(int(gap)) if gap == int(gap) else repr(gap)


def log_agreement(
    votes_a: Iterable[Vote],
    votes_b: Iterable[Vote],
    *,
    grades: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """The report of ``toppref agreement``: :class:`Agreement` over every shared pair and, given ``grades``
    (topic -> docid -> grade, e.g. the NIST qrels), ``by_grade_gap``: the same for the shared pairs of each
    grade gap (gaps in ascending order, ``unjudged`` last), with, for gaps above 0, how often each log's
    decisive votes prefer the higher-graded item."""
    labels_a, labels_b = votes_by_pair(votes_a), votes_by_pair(votes_b)
    report = vote_agreement(labels_a, labels_b).as_dict()
    if grades is not None:
        groups: dict[str, set[PairKey]] = defaultdict(set)
        higher: dict[PairKey, int] = {}
        for key in labels_a.keys() & labels_b.keys():
            gap = grade_gap(grades, key)
            groups[gap].add(key)
            if gap not in ("0", UNJUDGED):
                topic = grades[key[0]]
                higher[key] = FIRST if topic[key[1]] > topic[key[2]] else SECOND
        order = sorted((gap for gap in groups if gap != UNJUDGED), key=float) + (
            [UNJUDGED] if UNJUDGED in groups else []
        )
        report["by_grade_gap"] = {
            gap: vote_agreement(
                {key: labels_a[key] for key in groups[gap]},
                {key: labels_b[key] for key in groups[gap]},
                higher=higher,
            ).as_dict()
            for gap in order
        }
    return report
