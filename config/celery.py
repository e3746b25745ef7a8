"""The Celery app. Tasks live in each app's ``tasks.py``; settings come from Django's CELERY_* names.

``enqueue_on_commit`` is how every service queues follow-up work: after the transaction commits, and never
raising to the caller when the broker cannot take the message (the committed work stands; the periodic sweep,
``judging.services.sweep``, redoes what the lost task would have done). Services name the task by its registered
name ("judging.tasks.hit_build_task"), never by importing the tasks module: tasks call services, so the name is
what breaks the cycle (docs/decisions.md "Services enqueue tasks by registered name")."""

import logging
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("toppref")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger("toppref.enqueue")


def broker_errors() -> tuple[type[BaseException], ...]:
    """What a send raises when the broker is unreachable or refuses the message: kombu's and redis's
    errors, and the sockets' own (a closed port, a reset connection, a timeout)."""
    from kombu.exceptions import KombuError
    from kombu.exceptions import OperationalError as KombuOperationalError

    errors: tuple[type[BaseException], ...] = (KombuError, KombuOperationalError, OSError)
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is installed with celery[redis]
        return errors
    return (*errors, RedisError)


def registered_task(name: str):
    """The task registered as ``name``. The apps' tasks modules are imported on the first look-up, as a worker
    imports them at start (Celery's autodiscovery); an unknown name raises ``KeyError`` (a bug, not a broker
    failure)."""
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]


def task_signature(name: str, *args, **kwargs):
    """An immutable signature of the task registered as ``name`` (for chains: build, then publish)."""
    return registered_task(name).si(*args, **kwargs)


def enqueue(task, *args, **kwargs) -> bool:
    """Send ``task(*args, **kwargs)`` to the broker now; False (logged) when the broker could not take it.
    ``task`` is a registered task name, a task or a signature. With eager Celery (no broker) the task runs
    here and its own errors propagate, as in the tests."""
    if isinstance(task, str):
        task = registered_task(task)
    try:
        task.delay(*args, **kwargs)
    except broker_errors() as error:
        if app.conf.task_always_eager:
            raise
        logger.warning(
            "could not queue %s%r (%s: %s); the periodic sweep will redo it",
            getattr(task, "name", None) or task,
            args,
            type(error).__name__,
            error,
        )
        return False
    return True


def enqueue_on_commit(task, *args, **kwargs) -> None:
    """Queue ``task(*args, **kwargs)`` once the current transaction commits (at once outside one). A broker
    that cannot take the message is logged, not raised: the answer or change that committed is kept and
    reported as a success, and the sweep finds the state the task would have advanced."""
    from django.db import transaction

    if isinstance(task, str):
        task = registered_task(task)  # now, so that a wrong name fails in the service, not after commit
    transaction.on_commit(lambda: enqueue(task, *args, **kwargs))
