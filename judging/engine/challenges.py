"""Challenge questions: a candidate against a known non-relevant item (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.3)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence


def challenge_pick(
    candidates: Sequence[str], nonrelevant: Sequence[str], rng: random.Random
) -> tuple[str, str] | None:
    """One challenge question: ``(candidate, nonrelevant_item)``, each drawn uniformly at random
    ("Assessing top-k preferences", section 4.3: "a random passage from the candidate pool against a random non-relevant
    passage"; docs/decisions.md "Challenges"). The candidate is the expected winner; a worker who picks the other
    side fails the challenge. ``None`` when either list is empty (the topic cannot supply challenges).
    """
    if not candidates or not nonrelevant:
        return None
    return rng.choice(list(candidates)), rng.choice(list(nonrelevant))


def conversation_of(topic_id: str) -> str:
    """The conversation of a TREC CAsT turn id: the part before the last underscore (``"31_2"`` ->
    ``"31"``); an id without an underscore is its own conversation."""
    return topic_id.rsplit("_", 1)[0] if "_" in topic_id else topic_id


def challenge_nonrelevant(
    topic_id: str,
    grades: Mapping[str, Mapping[str, float]],
    *,
    conversation: Callable[[str], str] = conversation_of,
) -> list[str]:
    """The non-relevant items to draw a topic's challenges from (docs/decisions.md "Challenges"): the items graded
    0 (or below) for the topic itself; if it has none, those of the other topics of the same
    conversation that the topic itself did not grade positive; else []. Sorted, so draws are
    reproducible. ``grades`` maps topic -> docid -> grade.
    """
    own = sorted(docid for docid, grade in grades.get(topic_id, {}).items() if grade <= 0)
    if own:
        return own
    home = conversation(topic_id)
    # Turns of one conversation share passages: one graded 0 for a sibling may be relevant here.
    own_relevant = {docid for docid, grade in grades.get(topic_id, {}).items() if grade > 0}
    return sorted(
        {
            docid
            for other, items in grades.items()
            if other != topic_id and conversation(other) == home
            for docid, grade in items.items()
            if grade <= 0 and docid not in own_relevant
        }
    )
