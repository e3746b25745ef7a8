"""Project wiring: settings, URLs, the Celery app and the ``toppref`` command line."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
