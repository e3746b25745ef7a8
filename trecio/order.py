"""The order people expect topic ids in: TREC ids mix letters and numbers (``d1``, ``d2``, ``d10``; CAsT's
``31_1``, ``31_10``), and plain string order puts ``d10`` before ``d2``."""

from __future__ import annotations

import re

_PARTS = re.compile(r"(\d+)")


def topic_order_key(topic_id: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key comparing runs of digits as numbers and the rest as text: d1 < d2 < d10 < d11; ``31_2`` before
    ``31_10``. Numbers sort before text at the same place, so keys of any two ids compare."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _PARTS.split(topic_id) if part != ""
    )
