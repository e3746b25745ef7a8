"""Reading one answer from a pair page's form: the side chosen and the milliseconds the judge took."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.core import signing
from django.http import HttpRequest, HttpResponse, QueryDict

SIDES = ("left", "right")
# An answer slower than a day is not a measurement (a tab left open); it is stored as unknown.
MAX_MILLISECONDS = 24 * 3600 * 1000
SHOWN_SALT = "toppref.pair.shown"
# One request per answer: the page's script asks for the next page with the first header and learns its URL
# from the second (README, "One request per answer").
NEXT_HEADER, LOCATION_HEADER = "X-Toppref-Next", "X-Toppref-Location"


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


def answered(request: HttpRequest, url: str, next_page: Callable[[], HttpResponse]) -> HttpResponse:
    """The response to a stored answer: 303 to ``url`` (the no-JS form), or, when the page's script asks with
    ``X-Toppref-Next: 1``, that page itself (``next_page()``) as a 200 with ``X-Toppref-Location: url``, so
    that one request per answer stores it and brings the next pair. The answer is stored either way, so the
    status is 200 even when the next page is a refusal (e.g. the "excluded" page after a failed challenge)."""
    if request.headers.get(NEXT_HEADER) != "1":
        response = HttpResponse(status=303)
        response["Location"] = url
        return response
    response = next_page()
    if response.status_code in (301, 302, 303):
        return response  # the next page is elsewhere (e.g. the instructions): the script follows it
    response.status_code = 200
    response[LOCATION_HEADER] = url
    response["Vary"] = NEXT_HEADER
    return response
