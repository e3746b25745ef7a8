"""The Celery app. Tasks live in each app's ``tasks.py``; settings come from Django's CELERY_* names."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("toppref")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
