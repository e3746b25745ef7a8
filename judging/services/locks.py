"""Row locks in plain SQL for the judges' answer path: ``SELECT ... FOR UPDATE`` written out, because Django's
compilation of the same statement cost ten times its run on every answer (docs/decisions.md, "Plain SQL on
the answer path"). The rows come back as model instances (``judging.selectors.rows.model_rows``). Same
locks, in the same order, as the ORM's ``select_for_update``; on SQLite, which has no row locks (the writer's
IMMEDIATE transaction holds the whole database), the clause is left out as the ORM leaves it out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

from judging.selectors.rows import model_rows

M = TypeVar("M", bound=Model)


def first_locked(model: type[M], where: str, params: Sequence[Any], *, skip_locked: bool = False) -> M | None:
    """The first row by id of ``model``'s table that matches ``where`` (plain SQL on its own columns, with
    ``%s`` for ``params``), locked for the rest of the transaction, or None. ``skip_locked``: rows another
    transaction holds are passed over (PostgreSQL ``SKIP LOCKED``) instead of waited for."""
    lock = ""
    if connection.features.has_select_for_update:
        lock = " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"
    rows = model_rows(
        model, f"FROM {model._meta.db_table} t WHERE {where} ORDER BY t.id LIMIT 1{lock}", params, alias="t"
    )
    return rows[0] if rows else None


def row_locked(model: type[M], pk: int) -> M:
    """The row ``pk`` of ``model``, locked: ``model.objects.select_for_update().get(pk=pk)`` in plain SQL
    (``model.DoesNotExist`` when it is not there)."""
    row = first_locked(model, "id = %s", [pk])
    if row is None:
        raise model.DoesNotExist(f"{model.__name__} {pk} does not exist")  # type: ignore[attr-defined]
    return row
