"""HITs: packing open pairs into HITs and laying out one HIT (Clarke, Vtyurina and Smucker, "Assessing top-k preferences",
section 4.3; docs/decisions.md "Challenges")."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class SlotLayout:
    """One question of a HIT, as shown: ``position`` 0-based; ``left``/``right`` the two items;
    ``is_challenge`` marks a quality-control question; ``source_index`` is the index of the pair in
    the ``pairs`` (or ``challenges``) argument of ``hit_layout``, so callers can map a slot back to
    their own pair or challenge record (for pairs of several topics, say)."""

    position: int
    left: str
    right: str
    is_challenge: bool
    source_index: int


def hit_layout(
    pairs: Sequence[tuple[str, str]], challenges: Sequence[tuple[str, str]], *, rng: random.Random
) -> list[SlotLayout]:
    """The slots of one HIT: every pair and challenge once, the challenges at uniformly random
    positions among the pairs (pairs keep their relative order), and left/right drawn at random
    (fair coin) for every slot, challenges included, so the expected winner of a challenge is on
    either side. Positions are 0..len(pairs)+len(challenges)-1.
    """
    total = len(pairs) + len(challenges)
    challenge_positions = set(rng.sample(range(total), len(challenges)))
    slots = []
    next_pair = next_challenge = 0
    for position in range(total):
        if position in challenge_positions:
            a, b = challenges[next_challenge]
            index, is_challenge = next_challenge, True
            next_challenge += 1
        else:
            a, b = pairs[next_pair]
            index, is_challenge = next_pair, False
            next_pair += 1
        if rng.random() < 0.5:
            a, b = b, a
        slots.append(
            SlotLayout(position=position, left=a, right=b, is_challenge=is_challenge, source_index=index)
        )
    return slots


def pack_hits(queue: Sequence[T], *, preferences_per_hit: int = 10) -> list[list[T]]:
    """Split a queue of open pairs (of any topics, in queue order) into HITs of
    ``preferences_per_hit`` pairs; the last HIT holds the remainder (a round cannot close while its
    pairs wait for a full HIT). An empty queue gives no HIT."""
    if preferences_per_hit < 1:
        raise ValueError(f"a HIT needs at least one preference (got {preferences_per_hit})")
    return [list(queue[i : i + preferences_per_hit]) for i in range(0, len(queue), preferences_per_hit)]


def pack_hits_distinct(
    queue: Sequence[T], *, preferences_per_hit: int = 10, key: Callable[[T], Hashable]
) -> list[list[T]]:
    """``pack_hits`` for a queue in which one pair may come several times (the adaptive mode's repeat votes,
    each for a different worker): in queue order, but an item whose ``key`` the HIT being filled already
    holds waits for the next HIT, so no HIT shows a pair twice. Only the last HITs may be partial."""
    if preferences_per_hit < 1:
        raise ValueError(f"a HIT needs at least one preference (got {preferences_per_hit})")
    hits: list[list[T]] = []
    waiting: list[T] = []
    current: list[T] = []
    keys: set[Hashable] = set()

    def refill() -> None:
        nonlocal waiting
        rest = []
        for other in waiting:
            if len(current) < preferences_per_hit and key(other) not in keys:
                current.append(other)
                keys.add(key(other))
            else:
                rest.append(other)
        waiting = rest

    def flush() -> None:
        nonlocal current
        hits.append(current)
        current = []
        keys.clear()
        refill()

    for item in queue:
        if key(item) in keys:
            waiting.append(item)
            continue
        current.append(item)
        keys.add(key(item))
        while len(current) >= preferences_per_hit:
            flush()
    while current or waiting:
        if current:
            flush()
        else:
            refill()
    return hits
