"""Project wiring: settings, URLs, the Celery app and the ``toppref`` command line.

The Celery app is loaded on first use (PEP 562), not on import: the ``toppref`` command line lives in this
package, and its file-only commands must not pay for Celery (docs/decisions.md, "A command line that starts
at once"). Django processes load it from ``config.settings``; ``celery -A config`` finds ``config.celery.app``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
