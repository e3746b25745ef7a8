"""Challenge questions: a candidate against a known non-relevant item (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.3).

One rule for both paths (``toppref simulate`` and the database's ``hit_build``; docs/decisions.md
"Challenges"): ``challenge_nonrelevant`` chooses the passages a topic's challenges may use, ``challenge_pick``
draws one challenge of a HIT."""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence


def challenge_pick(
    candidates: Sequence[str],
    nonrelevant: Sequence[str],
    rng: random.Random,
    *,
    used: Collection[str] = (),
) -> tuple[str, str] | None:
    """One challenge question: ``(candidate, nonrelevant_item)``, each drawn uniformly at random
    ("Assessing top-k preferences", section 4.3: "a random passage from the candidate pool against a random non-relevant
    passage"; docs/decisions.md "Challenges"). The candidate is the expected winner; a worker who picks the other
    side fails the challenge. ``used`` are the non-relevant items the HIT's earlier challenges showed: none is
    shown twice in a HIT, so no challenge pair repeats in it. ``None`` when either list is empty (the topic
    cannot supply another challenge).
    """
    fresh = [docid for docid in nonrelevant if docid not in used] if used else list(nonrelevant)
    if not candidates or not fresh:
        return None
    return rng.choice(list(candidates)), rng.choice(fresh)


def conversation_of(topic_id: str) -> str:
    """The conversation of a TREC CAsT turn id: the part before the last underscore (``"31_2"`` ->
    ``"31"``); an id without an underscore is its own conversation."""
    return topic_id.rsplit("_", 1)[0] if "_" in topic_id else topic_id


def challenge_nonrelevant(
    topic_id: str,
    grades: Mapping[str, Mapping[str, float]],
    *,
    conversation: Callable[[str], str] = conversation_of,
    shown: Collection[str] | None = None,
) -> list[str]:
    """The non-relevant items to draw a topic's challenges from (docs/decisions.md "Challenges"): the items graded
    0 (or below) for the topic itself; if it has none, those of the other topics of the same
    conversation; else []. Never an item the topic itself grades relevant (> 0): ``grades[topic_id]`` must
    hold ALL the topic's grades, not only its non-relevant ones, or this guard is empty. When ``shown`` (the
    passages ordinary pairs show: every topic's candidates) holds some of them, only those: a passage that
    appears in ordinary pairs too (as a candidate of another question) does not give a challenge away.
    Sorted, so draws are reproducible. ``grades`` maps topic -> docid -> grade.
    """
    own_grades = grades.get(topic_id, {})
    # Turns of one conversation share passages: one graded 0 for a sibling may be relevant here.
    own_relevant = {docid for docid, grade in own_grades.items() if grade > 0}
    nonrelevant = {docid for docid, grade in own_grades.items() if grade <= 0}
    if not nonrelevant:
        home = conversation(topic_id)
        nonrelevant = {
            docid
            for other, items in grades.items()
            if other != topic_id and conversation(other) == home
            for docid, grade in items.items()
            if grade <= 0
        }
    nonrelevant -= own_relevant
    if shown is not None:
        in_pairs = nonrelevant & set(shown)
        if in_pairs:
            nonrelevant = in_pairs
    return sorted(nonrelevant)


def challenge_is_fair(topic_grades: Mapping[str, float], nonrelevant_docid: str) -> bool:
    """Whether a challenge's non-relevant side may be used for a topic with these grades: never one the
    topic grades relevant (> 0). The check the tests run on both paths."""
    return topic_grades.get(nonrelevant_docid, 0) <= 0
