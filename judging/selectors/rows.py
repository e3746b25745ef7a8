"""Model instances from plain SQL, for the statements of every pair page and answer (docs/decisions.md,
"Plain SQL for the pair page's reads" and "Plain SQL on the answer path"). ``Model.objects.raw`` costs more
CPU than the statement itself (it looks up the columns, their fields and their converters on every call, about
0.4 ms here); ``model_rows`` selects the model's columns in a fixed order and builds the instances with
``Model.from_db``, applying the same converters (the backend's and the fields': JSON, and SQLite's dates,
booleans and decimals), looked up once per model and database."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]
_COLUMNS: dict[tuple[type[Model], str], tuple[list[str], list[tuple[int, list[Converter], Any]]]] = {}


def _columns(model: type[Model]) -> tuple[list[str], list[tuple[int, list[Converter], Any]]]:
    """The model's concrete fields' attribute names and, for those that have any, their converters."""
    key = (model, connection.vendor)
    if key not in _COLUMNS:
        fields = model._meta.concrete_fields
        converters = []
        for position, field in enumerate(fields):
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if found:
                converters.append((position, found, column))
        _COLUMNS[key] = ([field.attname for field in fields], converters)
    return _COLUMNS[key]


def model_rows(model: type[M], sql: str, params: Sequence[Any], *, alias: str) -> list[M]:
    """The instances of ``model`` that ``SELECT <its columns> `` + ``sql`` gives, ``sql`` naming the model's
    table ``alias`` (``"FROM judging_worker w WHERE w.id = %s"`` with ``alias="w"``)."""
    names, converters = _columns(model)
    columns = ", ".join(f"{alias}.{field.column}" for field in model._meta.concrete_fields)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} {sql}", list(params))
        rows = cursor.fetchall()
    instances = []
    for row in rows:
        values = list(row)
        for position, functions, column in converters:
            for function in functions:
                values[position] = function(values[position], column, connection)
        instances.append(model.from_db(connection.alias, names, values))
    return instances


def joined_rows(models: Sequence[tuple[type[Model], str]], sql: str, params: Sequence[Any]) -> list[tuple]:
    """``model_rows`` for a join: one instance of each ``(model, alias)`` per row, in that order, from
    ``SELECT <each model's columns> `` + ``sql``; one statement where ``model_rows`` would take one per model."""
    layout, selected = [], []
    for model, alias in models:
        names, converters = _columns(model)
        layout.append((model, names, converters))
        selected += [f"{alias}.{field.column}" for field in model._meta.concrete_fields]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(selected)} {sql}", list(params))
        rows = cursor.fetchall()
    found = []
    for row in rows:
        start, instances = 0, []
        for model, names, converters in layout:
            values = list(row[start : start + len(names)])
            for position, functions, column in converters:
                for function in functions:
                    values[position] = function(values[position], column, connection)
            instances.append(model.from_db(connection.alias, names, values))
            start += len(names)
        found.append(tuple(instances))
    return found
