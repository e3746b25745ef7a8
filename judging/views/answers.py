"""Reading one answer from a pair page's form: the side chosen and the milliseconds the judge took."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.core import signing
from django.http import QueryDict

SIDES = ("left", "right")
# An answer slower than a day is not a measurement (a tab left open); it is stored as unknown.
MAX_MILLISECONDS = 24 * 3600 * 1000
SHOWN_SALT = "toppref.pair.shown"


def shown_stamp() -> str:
    """A signed time of rendering for the pair form's ``shown`` field: without JavaScript the server times the
    answer from it (to the page's arrival, not its display, so a little longer than the script measures)."""
    return signing.dumps(int(time.time() * 1000), salt=SHOWN_SALT)


@dataclass(frozen=True)
class Answer:
    side: str
    milliseconds: int | None


def parse_answer(data: QueryDict) -> Answer | None:
    """The answer in a POST, or None when the side is missing or not exactly one of left/right.
    ``milliseconds`` is what the page's script measured, else the time since the signed ``shown`` stamp,
    else None."""
    sides = data.getlist("side")
    if len(sides) != 1 or sides[0] not in SIDES:
        return None
    try:
        milliseconds = int(data.get("ms", ""))
    except ValueError:
        milliseconds = _since_shown(data.get("shown", ""))
    if milliseconds is not None and not 0 <= milliseconds <= MAX_MILLISECONDS:
        milliseconds = None
    return Answer(side=sides[0], milliseconds=milliseconds)


def _since_shown(stamp: str) -> int | None:
    try:
        shown = int(signing.loads(stamp, salt=SHOWN_SALT))
    except (signing.BadSignature, TypeError, ValueError):
        return None
    return int(time.time() * 1000) - shown
