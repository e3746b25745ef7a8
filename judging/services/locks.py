"""Row locks in plain SQL for the judges' answer path: ``SELECT ... FOR UPDATE`` written out, because Django's
compilation of the same statement cost ten times its run on every answer (docs/decisions.md, "Plain SQL on
the answer path"). The rows come back as model instances (``Model.objects.raw``: the fields' converters
apply). Same locks, same order as the ORM's ``select_for_update``; on SQLite, which has no row locks (the
writer's IMMEDIATE transaction holds the whole database), the clause is left out as the ORM leaves it out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def first_locked(
    model: type[M], where: str, params: Sequence[object], *, skip_locked: bool = False
) -> M | None:
    """The first row by id of ``model``'s table that matches ``where`` (plain SQL on its own columns, with
    ``%s`` for ``params``), locked for the rest of the transaction, or None. ``skip_locked``: rows another
    transaction holds are passed over (PostgreSQL ``SKIP LOCKED``) instead of waited for."""
    lock = ""
    if connection.features.has_select_for_update:
        lock = " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"
    rows = model._default_manager.raw(
        f"SELECT * FROM {model._meta.db_table} WHERE {where} ORDER BY id LIMIT 1{lock}", list(params)
    )
    return next(iter(rows), None)


def row_locked(model: type[M], pk: int) -> M:
    """The row ``pk`` of ``model``, locked: ``model.objects.select_for_update().get(pk=pk)`` in plain SQL
    (``model.DoesNotExist`` when it is not there)."""
    row = first_locked(model, "id = %s", [pk])
    if row is None:
        raise model.DoesNotExist(f"{model.__name__} {pk} does not exist")  # type: ignore[attr-defined]
    return row
