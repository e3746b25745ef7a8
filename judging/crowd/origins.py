"""The crowd providers' web origins, facts about MTurk and Prolific that the judging app owns: which sites frame
an external HIT page, where its final form may go. ``config.middleware`` (the security headers) reads them."""

from __future__ import annotations

from django.conf import settings

# MTurk's worker sites that show an ExternalQuestion in an iframe (production, sandbox, legacy requester host).
MTURK_FRAME_ANCESTORS = (
    "https://worker.mturk.com",
    "https://workersandbox.mturk.com",
    "https://www.mturk.com",
)
# Where an MTurk HIT page's final form may go (``turkSubmitTo`` + "/mturk/externalSubmit").
MTURK_SUBMIT_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
PROLIFIC_ORIGIN = "https://app.prolific.com"


def mturk_submit_origins() -> tuple[str, ...]:
    """MTurk's production and sandbox origins plus ``TOPPREF_MTURK_SUBMIT_HOSTS`` (tests' stand-ins)."""
    return MTURK_SUBMIT_ORIGINS + tuple(
        origin.rstrip("/") for origin in getattr(settings, "TOPPREF_MTURK_SUBMIT_HOSTS", [])
    )
