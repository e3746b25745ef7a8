"""Dedicated-assessor top-k: a single-elimination tournament with replay (Clarke, Vtyurina and Smucker, "Assessing top-k preferences",
section 4.2)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from judging.engine.elimination import RankedItem

STATE_VERSION = 1


class Tournament:
    """Top-k by tournament selection ("Assessing top-k preferences", section 4.2).

    The candidates are shuffled once into a balanced knockout bracket (halves of sizes ceil(n/2) and
    floor(n/2), recursively; an odd count gives a bye). The bracket's champion is placed first; it is
    then removed and only the matches on its path are replayed, looking up every pair already judged
    in the judgment cache, to find the next place; and so on until min(k, |C|) items are placed.
    With a consistent assessor this takes at most |C| - 1 + (k-1)*(ceil(log2 |C|) - 1) judgments,
    within the paper's bound |C| + (k-1)*ceil(log2 |C|).

    The state is the bracket order, k and the cache of judgments; everything else is recomputed from
    them, so ``to_state``/``from_state`` resume exactly (days later, in another process). A pair is
    never asked twice: with an inconsistent assessor the first answer stands.
    Pools of 0 or 1 candidates are done at once (0 judgments).
    """

    def __init__(self, order: Sequence[str], k: int, judgments: Sequence[tuple[str, str]] = ()) -> None:
        """Use ``start`` or ``from_state``; ``order`` is the bracket's leaf order and ``judgments``
        the cached ``(winner, loser)`` outcomes in the order they were recorded."""
        if k < 1:
            raise ValueError(f"k must be at least 1 (got {k})")
        if len(set(order)) != len(order):
            raise ValueError("candidates must be distinct")
        self._order = list(order)
        self._members = set(order)
        self._k = k
        self._cache: dict[frozenset[str], str] = {}
        self._log: list[tuple[str, str]] = []
        for winner, loser in judgments:
            self.record(winner, loser)

    @classmethod
    def start(cls, candidates: Sequence[str], *, k: int, rng: random.Random) -> Tournament:
        """A new tournament over ``candidates`` with a bracket order drawn from ``rng``."""
        order = list(candidates)
        rng.shuffle(order)
        return cls(order, k)

    def next_pair(self) -> tuple[str, str] | None:
        """The next pair to judge (the same one until it is recorded), or ``None`` when done."""
        return self._advance()[1]

    def record(self, winner: str, loser: str) -> None:
        """Store one judgment in the cache. Recording a known pair again with the same winner does
        nothing (a retried request); with the other winner, or for a non-candidate, ``ValueError``."""
        if winner not in self._members or loser not in self._members or winner == loser:
            raise ValueError(f"({winner}, {loser}) is not a pair of two candidates of this tournament")
        key = frozenset((winner, loser))
        known = self._cache.get(key)
        if known is not None:
            if known != winner:
                raise ValueError(f"pair ({winner}, {loser}) was already judged with winner {known}")
            return
        self._cache[key] = winner
        self._log.append((winner, loser))

    @property
    def is_done(self) -> bool:
        """True once min(k, |C|) items are placed."""
        return self._advance()[1] is None

    def top_k(self) -> list[str]:
        """The items placed so far, best first (all min(k, |C|) of them once done)."""
        return self._advance()[0]

    def ranking(self) -> list[RankedItem]:
        """``top_k()`` as ranks 1, 2, ... (no ties), each with the number of cached judgments it won."""
        wins: dict[str, int] = {}
        for winner, _ in self._log:
            wins[winner] = wins.get(winner, 0) + 1
        return [RankedItem(docid=d, rank=i, wins=wins.get(d, 0)) for i, d in enumerate(self.top_k(), start=1)]

    @property
    def judgment_count(self) -> int:
        """Distinct pairs judged so far."""
        return len(self._log)

    @property
    def k(self) -> int:
        return self._k

    @property
    def target(self) -> int:
        """How many places the tournament decides: min(k, |C|)."""
        return min(self._k, len(self._order))

    def judged_items(self) -> frozenset[str]:
        """The candidates that took part in a judged pair so far (a judge has read them)."""
        return frozenset(docid for outcome in self._log for docid in outcome)

    def remaining_bound(self) -> int:
        """An upper bound on the judgments still needed, whatever the answers, exactly 0 once done: the
        matches of the current pass not yet decided by the cache (a match whose players are not both known
        counts as one), plus ceil(log2 |C|) - 1 for each later place, since removing a champion changes only
        the matches on its path from its leaf to the root, the first of which becomes a bye ("Assessing
        top-k preferences", section 4.2: "only the matches on its path are replayed"). Never more than the
        paper's |C| + (k-1)*ceil(log2 |C|); at the start it is |C| - 1 + (k-1)*(ceil(log2 |C|) - 1)."""
        placed, pending = self._advance()
        if pending is None:
            return 0
        removed = set(placed)
        _, open_matches = self._open(0, len(self._order), removed)
        depth = (len(self._order) - 1).bit_length()
        return open_matches + (self.target - len(placed) - 1) * max(depth - 1, 0)

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot: ``{"version", "k", "order", "judgments": [[winner, loser], ...]}``."""
        return {
            "version": STATE_VERSION,
            "k": self._k,
            "order": list(self._order),
            "judgments": [list(outcome) for outcome in self._log],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Tournament:
        """Rebuild a tournament from ``to_state()``; raises ``ValueError`` on an unknown version or
        inconsistent content."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported tournament state version {state.get('version')!r}")
        return cls(state["order"], state["k"], [tuple(outcome) for outcome in state["judgments"]])

    def _advance(self) -> tuple[list[str], tuple[str, str] | None]:
        """Replay the bracket from the cache: the places decided so far and the first pair that is
        still needed (or None when done)."""
        placed: list[str] = []
        removed: set[str] = set()
        target = min(self._k, len(self._order))
        while len(placed) < target:
            champion, pending = self._play(0, len(self._order), removed)
            if pending is not None:
                return placed, pending
            assert champion is not None  # target <= |C| guarantees someone is left
            placed.append(champion)
            removed.add(champion)
        return placed, None

    def _play(self, lo: int, hi: int, removed: set[str]) -> tuple[str | None, tuple[str, str] | None]:
        """Winner of the sub-bracket over ``order[lo:hi]`` without ``removed`` items, or the first
        unjudged match blocking it (left sub-bracket first)."""
        if hi - lo == 1:
            item = self._order[lo]
            return (None if item in removed else item), None
        mid = lo + (hi - lo + 1) // 2
        left, pending = self._play(lo, mid, removed)
        if pending is not None:
            return None, pending
        right, pending = self._play(mid, hi, removed)
        if pending is not None:
            return None, pending
        if left is None or right is None:
            return (left if right is None else right), None
        winner = self._cache.get(frozenset((left, right)))
        if winner is None:
            return None, (left, right)
        return winner, None

    def _open(self, lo: int, hi: int, removed: set[str]) -> tuple[str | None, int]:
        """The sub-bracket over ``order[lo:hi]`` without ``removed`` items: its winner if the cache decides it
        (else None, also when it is empty) and how many of its matches are not decided yet."""
        if hi - lo == 1:
            item = self._order[lo]
            return (None if item in removed else item), 0
        mid = lo + (hi - lo + 1) // 2
        left, left_open = self._open(lo, mid, removed)
        right, right_open = self._open(mid, hi, removed)
        opened = left_open + right_open
        left_empty = left is None and left_open == 0 and self._is_empty(lo, mid, removed)
        right_empty = right is None and right_open == 0 and self._is_empty(mid, hi, removed)
        if left_empty or right_empty:
            return (right if left_empty else left), opened
        if left is None or right is None:
            return None, opened + 1
        winner = self._cache.get(frozenset((left, right)))
        return (winner, opened) if winner is not None else (None, opened + 1)

    def _is_empty(self, lo: int, hi: int, removed: set[str]) -> bool:
        return all(item in removed for item in self._order[lo:hi])


def tournament_judgment_bound(pool_size: int, k: int) -> int:
    """The paper's bound on judgments for the top-k of a pool ("Assessing top-k preferences", section 4.2, Table 2):
    |C| + (k-1)*ceil(log2 |C|), with log base 2 (the base that reproduces Table 2's 5,429); 0 for an empty pool."""
    if pool_size < 0 or k < 1:
        raise ValueError(f"need pool_size >= 0 and k >= 1 (got {pool_size}, {k})")
    if pool_size == 0:
        return 0
    return pool_size + (k - 1) * (pool_size - 1).bit_length()
