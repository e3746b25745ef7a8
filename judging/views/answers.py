"""Reading one answer from a pair page's form: the side chosen and the milliseconds the judge took."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import QueryDict

SIDES = ("left", "right")
# An answer slower than a day is not a measurement (a tab left open); it is stored as unknown.
MAX_MILLISECONDS = 24 * 3600 * 1000


@dataclass(frozen=True)
class Answer:
    side: str
    milliseconds: int | None


def parse_answer(data: QueryDict) -> Answer | None:
    """The answer in a POST, or None when the side is missing or not exactly one of left/right. Without
    JavaScript no time is measured, so ``milliseconds`` is None."""
    sides = data.getlist("side")
    if len(sides) != 1 or sides[0] not in SIDES:
        return None
    try:
        milliseconds = int(data.get("ms", ""))
    except ValueError:
        milliseconds = None
    if milliseconds is not None and not 0 <= milliseconds <= MAX_MILLISECONDS:
        milliseconds = None
    return Answer(side=sides[0], milliseconds=milliseconds)
