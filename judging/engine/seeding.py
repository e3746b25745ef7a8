"""The seeding rule every caller of the engine shares, so a campaign is a function of its seed alone.

Each random decision draws from its own stream, named by what it decides: the pairs of round r of a
topic, a topic's tournament bracket, the challenges and layout of HIT number n. A stream depends on
(seed, topic, round) or (seed, HIT number) only, never on the order in which topics, rounds or HITs are
processed, so the pure simulator, a Celery worker that regenerates a round after a crash and a database
campaign give the same pairs (docs/decisions.md, "One crowd state machine, one seeding rule").
"""

from __future__ import annotations

import random
from collections.abc import Iterable


def candidate_order(docids: Iterable[str]) -> list[str]:
    """The canonical order of a candidate pool: docids sorted as strings. The pairing graph maps
    candidates to vertices in this order, so every caller must present the pool the same way."""
    return sorted(docids)


def round_rng(*, seed: int, topic_id: str, number: int) -> random.Random:
    """The random source of round ``number`` (1-based) of topic ``topic_id``: its stage-1 pairing graph."""
    return random.Random(f"{seed}:{topic_id}:round:{number}")


def tournament_rng(*, seed: int, topic_id: str) -> random.Random:
    """The random source of one topic's single-elimination bracket (dedicated assessors)."""
    return random.Random(f"{seed}:{topic_id}:tournament")


def hit_rng(*, seed: int, number: int) -> random.Random:
    """The random source of HIT ``number`` (1-based within a campaign): its challenges and layout."""
    return random.Random(f"{seed}:hit:{number}")


def audit_rng(*, seed: int, topic_id: str, number: int) -> random.Random:
    """The random source of round ``number`` of an adaptive topic's audits: which new pairs get a second vote."""
    return random.Random(f"{seed}:{topic_id}:audit:{number}")
