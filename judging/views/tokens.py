"""The signed, expiring token that carries a worker's identity on the external HIT pages instead of a cookie
(cookies inside MTurk's iframe are third-party and often dropped). It names the assignment, the worker and
the HIT, and where the final submit goes; nothing about the questions, so challenges cannot be told apart."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core import signing

SALT = "toppref.hits.token"


@dataclass(frozen=True)
class HitToken:
    assignment_id: int
    worker_id: int
    hit_public_id: str
    provider: str
    submit_origin: str


class TokenExpired(Exception):
    """The token was genuine but is older than ``TOPPREF_HIT_TOKEN_MAX_AGE``."""


class TokenInvalid(Exception):
    """The token was forged, altered, or made for another HIT."""


def token_make(
    *, assignment_id: int, worker_id: int, hit_public_id: str, provider: str, submit_origin: str = ""
) -> str:
    payload = {"a": assignment_id, "w": worker_id, "h": hit_public_id, "p": provider, "s": submit_origin}
    return signing.dumps(payload, salt=SALT, compress=True)


def token_read(token: str, *, hit_public_id: str) -> HitToken:
    """The token's claims, checked for signature, age and HIT; raises ``TokenExpired`` or ``TokenInvalid``."""
    try:
        payload = signing.loads(token, salt=SALT, max_age=settings.TOPPREF_HIT_TOKEN_MAX_AGE)
    except signing.SignatureExpired:
        raise TokenExpired from None
    except signing.BadSignature:
        raise TokenInvalid from None
    if not isinstance(payload, dict) or payload.get("h") != hit_public_id:
        raise TokenInvalid
    return HitToken(
        assignment_id=int(payload["a"]),
        worker_id=int(payload["w"]),
        hit_public_id=payload["h"],
        provider=str(payload["p"]),
        submit_origin=str(payload.get("s", "")),
    )
