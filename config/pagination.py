"""The API's one pagination: limit/offset with a ceiling on ``limit``.

Without ``max_limit`` DRF passes any ``?limit=`` to the query, and a number past 2^63 overflows SQLite's integer
(a 500 on every list); with it, a larger limit is the ceiling. An ``?offset=`` past the count already gives an
empty page without querying it.
"""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

MAX_PAGE_SIZE = 1000


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_PAGE_SIZE
