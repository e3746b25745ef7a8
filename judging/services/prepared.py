"""Prepared statements: a query the ORM builds and compiles once per process and database, then runs as its SQL
with each call's values bound. The rule a statement states stays written once, in the ORM, beside the services'
other queries; what is saved is Django's building and compiling of it (0.6 to 1.4 ms of CPU for a statement
with subqueries on this machine, more than the database's work), on every HIT of the campaign path
(docs/decisions.md, "The campaign path's statements").

A statement is built by calling its builder with stand-ins for the call's values: distinct integers from
``FIRST_INTEGER`` (inside every integer column's range, so Django's overflow checks keep them as parameters)
and datetimes in 2001 that no constant of these statements takes. Each compiled parameter equal to a stand-in is
the call's value, bound at each run; the others are the statement's constants. A stand-in Django folded into
the SQL text (it would run with the first call's value forever) is refused when the statement is built.
Values are integers, datetimes, or sequences of integers, whose length is part of the statement (``IN (...)``
has one parameter per element). A builder must depend on its arguments only: anything else that shapes the
query (a mode, a flag) goes into the statement's name.

Rows already in hand are written the same way: ``instance_update`` (what ``save(update_fields=...)`` stores) and
``instances_insert`` (what ``bulk_create`` stores; ``rows_insert`` the same for rows given as values, not
instances), their SQL written once per model and shape from the model's fields, each value converted by its
field."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, connection, models, transaction
from django.db.models import Field, Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql import UpdateQuery
from django.utils import timezone

M = TypeVar("M", bound=Model)
# The Django release whose private compiler API (get_related_populators, UpdateQuery, a compiler's select,
# klass_info, annotation_col_map, col_count, get_converters) this module was checked against: requirements.lock
# pins it, and tests/judging/test_prepared_django_api.py fails while the installed Django is another, until
# tests/judging/test_prepared.py passes on the new one and this line names it.
DJANGO_VERIFIED = "5.2.19"
FIRST_INTEGER = 32_001  # below 32,767: a stand-in fits even a small integer column
FIRST_DATETIME = datetime(2001, 2, 3, 4, 5, 6, tzinfo=UTC)
# Parameters per INSERT: within SQLite's 32,766 (and PostgreSQL's 65,535).
MAX_INSERT_PARAMETERS = 30_000
# Inserts of up to this many rows keep their SQL text (a HIT's answers, an assignment); longer ones are rare.
KEPT_INSERT_ROWS = 64


@dataclass(frozen=True)
class _Value:
    """Where a compiled parameter takes a call's value: ``name``, and its element for a sequence."""

    name: str
    index: int | None


@dataclass
class _Statement:
    sql: str
    params: tuple[Any, ...]  # constants and _Value
    compiler: Any  # the compiler that built ``sql``: its select list converts and populates the rows
    converters: dict[
        int, tuple[list, Any]
    ]  # column -> the functions converting its values, and its expression


_statements: dict[tuple, _Statement] = {}


def prepared_rows(name: str, build: Callable[..., QuerySet], /, **values: Any) -> list[tuple[Any, ...]]:
    """The rows of ``build(**values)``, a ``values_list`` query, converted as the ORM converts them."""
    statement = _statement(name, "rows", build, values)
    return [tuple(row) for row in _converted(statement, _fetch(statement, values))]


def prepared_objects(name: str, build: Callable[..., QuerySet[M]], /, **values: Any) -> list[M]:
    """The model instances of ``build(**values)`` as the ORM makes them: ``select_related`` objects and
    annotations included (the steps of Django's ``ModelIterable``)."""
    statement = _statement(name, "rows", build, values)
    rows = _fetch(statement, values)
    if not rows:
        return []
    compiler = statement.compiler
    select, klass_info = compiler.select, compiler.klass_info
    model = klass_info["model"]
    first, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    attnames = [column[0].target.attname for column in select[first:end]]
    # Django 5's signature (pyproject pins Django < 6; the stubs describe 6, which adds a fetch mode).
    populators = get_related_populators(klass_info, select, connection.alias)  # type: ignore[call-arg]
    found = []
    for row in _converted(statement, rows):
        instance = model.from_db(connection.alias, attnames, row[first:end])
        for populator in populators:
            populator.populate(row, instance)
        for attribute, position in compiler.annotation_col_map.items():
            setattr(instance, attribute, row[position])
        found.append(instance)
    return found


def prepared_get(name: str, build: Callable[..., QuerySet[M]], /, **values: Any) -> M:
    """The one instance of ``build(**values)`` (a query by primary key), or its model's ``DoesNotExist``, as
    ``get`` raises it."""
    found = prepared_objects(name, build, **values)
    if not found:
        model = _statement(name, "rows", build, values).compiler.query.model
        raise model.DoesNotExist(f"{model.__name__} matching {values} does not exist")
    return found[0]


def prepared_update(
    name: str, build: Callable[..., tuple[QuerySet, dict[str, Any]]], /, **values: Any
) -> int:
    """Run ``queryset.update(**changes)`` for ``(queryset, changes) = build(**values)``; the number of rows
    changed."""
    write = prepared_update_write(name, build, **values)
    if write is None:
        return 0
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
        cursor.execute(write.sql, write.params)
        return cursor.rowcount


def prepared_update_write(
    name: str, build: Callable[..., tuple[QuerySet, dict[str, Any]]], /, **values: Any
) -> Write | None:
    """``prepared_update``'s statement as a ``Write``, for ``writes_run``; None when it changes nothing (an
    empty ``pk__in``: Django runs no statement)."""
    statement = _statement(name, "update", build, values)
    if not statement.sql:
        return None
    return Write(statement.sql, _bound(statement, values), label=name)


@dataclass(frozen=True)
class Write:
    """One write statement in hand: its SQL and parameters, what it writes (``label``, for errors), whether it
    must change a row (an instance's update: its row is gone otherwise) and whether its SQL returns rows
    already (an INSERT ... RETURNING)."""

    sql: str
    params: list[Any]
    label: str
    changes_a_row: bool = False
    returning: bool = False


def writes_run(writes: Sequence[Write]) -> None:
    """Run ``writes`` in their order. On PostgreSQL they go as one statement, each a data-modifying ``WITH``
    of it, so a write of several tables costs one round trip to the server; the writes must then be of
    different rows (PostgreSQL makes them from one snapshot, in no set order, and a row changed by two of
    them is changed once), and none may read what another writes; writes with more parameters than
    ``MAX_INSERT_PARAMETERS`` together go one by one, as SQLite runs them. A write that ``changes_a_row``
    and changed none raises ``DatabaseError``, as ``instance_update`` does."""
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
        if (
            connection.vendor != "postgresql"
            or len(writes) < 2
            or sum(len(write.params) for write in writes) > MAX_INSERT_PARAMETERS
        ):
            for write in writes:
                cursor.execute(write.sql, write.params)
                if write.changes_a_row and cursor.rowcount == 0:
                    raise DatabaseError(f"{write.label}: the update changed no row")
            return
        parts = [
            f"w{n} AS ({write.sql}{'' if write.returning else ' RETURNING 1'})"
            for n, write in enumerate(writes)
        ]
        counts = ", ".join(f"(SELECT COUNT(*) FROM w{n})" for n in range(len(writes)))
        cursor.execute(
            f"WITH {', '.join(parts)} SELECT {counts}", [param for write in writes for param in write.params]
        )
        for write, rows in zip(writes, cursor.fetchone(), strict=True):
            if write.changes_a_row and rows == 0:
                raise DatabaseError(f"{write.label}: the update changed no row")


def _statement(name: str, kind: str, build: Callable, values: dict[str, Any]) -> _Statement:
    shape = tuple(
        (key, len(value) if isinstance(value, Sequence) else type(value).__name__)
        for key, value in sorted(values.items())
    )
    key = (connection.alias, connection.vendor, name, kind, shape)
    statement = _statements.get(key)
    if statement is None:
        statement = _statements[key] = _compile(name, kind, build, values)
    return statement


def _compile(name: str, kind: str, build: Callable, values: dict[str, Any]) -> _Statement:
    stand_ins: dict[str, Any] = {}
    where: dict[Any, _Value] = {}
    integers = (FIRST_INTEGER + n for n in range(10**6))
    moments = (FIRST_DATETIME + timedelta(microseconds=n) for n in range(10**6))
    for key, value in sorted(values.items()):
        if isinstance(value, datetime):
            stand_ins[key] = next(moments)
            where[connection.ops.adapt_datetimefield_value(stand_ins[key])] = _Value(key, None)
        elif isinstance(value, int) and not isinstance(value, bool):
            stand_ins[key] = next(integers)
            where[stand_ins[key]] = _Value(key, None)
        elif isinstance(value, Sequence) and all(isinstance(element, int) for element in value):
            stand_ins[key] = tuple(next(integers) for _ in value)
            where.update({stand_in: _Value(key, i) for i, stand_in in enumerate(stand_ins[key])})
        else:
            raise TypeError(
                f"prepared statement {name}: {key}={value!r} is not an integer, a datetime or integers"
            )
    if kind == "update":
        queryset, changes = build(**stand_ins)
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(changes)
        query.annotations = {}
    else:
        query = build(**stand_ins).query
    compiler = query.get_compiler(connection.alias)
    try:
        sql, compiled = compiler.as_sql()
    except EmptyResultSet:  # e.g. ``pk__in=[]``: Django runs no statement, and neither do we
        return _Statement(sql="", params=(), compiler=compiler, converters={})
    params = tuple(where.get(param, param) if _hashable(param) else param for param in compiled)
    folded = set(where.values()) - {param for param in params if isinstance(param, _Value)}
    if folded:
        raise ValueError(
            f"prepared statement {name}: {sorted(v.name for v in folded)} not bound as parameters"
        )
    converters = (
        compiler.get_converters([column[0] for column in compiler.select[: compiler.col_count]])
        if kind == "rows"
        else {}
    )
    return _Statement(sql=sql, params=params, compiler=compiler, converters=converters)


def _hashable(param: Any) -> bool:
    try:
        hash(param)
    except TypeError:
        return False
    return True


def _bound(statement: _Statement, values: dict[str, Any]) -> list[Any]:
    bound = []
    for param in statement.params:
        if not isinstance(param, _Value):
            bound.append(param)
            continue
        value = values[param.name] if param.index is None else values[param.name][param.index]
        if isinstance(value, datetime):
            value = connection.ops.adapt_datetimefield_value(value)
        bound.append(value)
    return bound


def _fetch(statement: _Statement, values: dict[str, Any]) -> list[tuple]:
    if not statement.sql:
        return []
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, _bound(statement, values))
        return cursor.fetchall()


def _converted(statement: _Statement, rows: list[tuple]) -> list[list]:
    """Each row with the database's values converted to Python's (SQLite's datetimes, booleans, durations),
    by the converters the compiler found for its select list."""
    converted = []
    for fetched in rows:
        row = list(fetched)
        for position, (functions, expression) in statement.converters.items():
            value = row[position]
            for function in functions:
                value = function(value, expression, connection)
            row[position] = value
        converted.append(row)
    return converted


_updates: dict[tuple, tuple[str, list[Field]]] = {}
_inserts: dict[tuple, str] = {}


def instance_update(instance: Model, fields: Sequence[str]) -> None:
    """``instance.save(update_fields=fields)`` as one UPDATE by primary key, its SQL written once per model
    and fields: each value as ``save`` stores it (``pre_save``, so ``auto_now`` fields take the time now,
    then the field's own conversion for the database), without the ORM's per-call building of the statement.
    Like ``save``, a row that is gone raises ``DatabaseError``. For rows the caller holds locked; the
    project sends no model signals (STYLE: no Django signals), so none is skipped."""
    writes_run([instance_update_write(instance, fields)])


def instance_update_write(instance: Model, fields: Sequence[str]) -> Write:
    """``instance_update``'s statement as a ``Write``, for ``writes_run``; the values are taken now."""
    meta = instance._meta
    key = (connection.alias, connection.vendor, meta.label, tuple(fields))
    if key not in _updates:
        quote = connection.ops.quote_name
        stored = [field for name in fields if isinstance(field := meta.get_field(name), Field)]
        columns = ", ".join(f"{quote(str(field.column))} = %s" for field in stored)
        _updates[key] = (
            f"UPDATE {quote(str(meta.db_table))} SET {columns} WHERE {quote(str(meta.pk.column))} = %s",
            stored,
        )
    sql, stored = _updates[key]
    params = [field.get_db_prep_save(field.pre_save(instance, False), connection) for field in stored]
    return Write(sql, [*params, instance.pk], label=f"{meta.label} {instance.pk}", changes_a_row=True)


_INTEGER_FIELDS = (
    models.AutoField,
    models.BigAutoField,
    models.IntegerField,
    models.SmallIntegerField,
    models.BigIntegerField,
    models.PositiveIntegerField,
    models.PositiveSmallIntegerField,
    models.PositiveBigIntegerField,
)
_plain: dict[tuple, list[tuple[type, ...]]] = {}


def _plain_fields(meta: Any, fields: list[Field]) -> list[tuple[type, ...]]:
    """For each field, the Python types whose values the database takes as they are: ``get_db_prep_save``
    returns them unchanged (integers for integer columns and the foreign keys to them, booleans for boolean
    columns, strings for text columns), and ``pre_save`` returns the attribute (no ``auto_now``). Other
    values, and other fields, go through the field's own conversion. Half of an insert's CPU was those calls,
    for the thousands of judgments and slots of a campaign."""
    key = (connection.alias, connection.vendor, meta.label)
    if key not in _plain:
        found: list[tuple[type, ...]] = []
        for field in fields:
            target = getattr(field, "target_field", field) if field.is_relation else field
            base_pre_save = type(field).pre_save is Field.pre_save
            if not base_pre_save:
                found.append(())
            elif type(target) in _INTEGER_FIELDS:
                found.append((int, type(None)))
            elif type(target) is models.BooleanField:
                found.append((bool, type(None)))
            elif type(target) in (models.CharField, models.TextField):
                found.append((str, type(None)))
            else:
                found.append(())
        _plain[key] = found
    return _plain[key]


def instances_insert(instances: Sequence[Model]) -> None:
    """``bulk_create(instances)`` (one model) as one INSERT whose text depends only on the model and the
    number of rows: each value as ``bulk_create`` stores it (``pre_save``, so ``auto_now_add`` fields take
    the time now, then the field's own conversion for the database), without the ORM's per-call building
    of the statement; each instance gets its primary key (``RETURNING``, on SQLite as on PostgreSQL) and
    is marked saved. Constraints are the database's, as for ``bulk_create``."""
    if not instances:
        return
    meta = instances[0]._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    batch = MAX_INSERT_PARAMETERS // len(fields)
    if len(instances) > batch:
        for start in range(0, len(instances), batch):
            instances_insert(instances[start : start + batch])
        return
    sql = _insert_sql(meta, fields, len(instances))
    plain = _plain_fields(meta, fields)
    params = [
        value
        if (kinds := plain[position]) and type(value := getattr(instance, field.attname)) in kinds
        else field.get_db_prep_save(field.pre_save(instance, True), connection)
        for instance in instances
        for position, field in enumerate(fields)
    ]
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [pk for (pk,) in cursor.fetchall()]
    # Both databases return the rows of a multi-row VALUES in their order (what ``bulk_create`` relies on).
    for instance, pk in zip(instances, pks, strict=True):
        instance.pk = pk
        instance._state.adding = False
        instance._state.db = connection.alias


def _insert_sql(meta: Any, fields: list[Field], rows: int) -> str:
    """The INSERT of ``rows`` rows of every field of ``fields`` (the model's concrete fields but its primary
    key), returning their primary keys; kept per model and number of rows."""
    key = (connection.alias, connection.vendor, meta.label, rows)
    sql = _inserts.get(key)
    if sql is None:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(field.column)) for field in fields)
        row = f"({', '.join(['%s'] * len(fields))})"
        sql = (
            f"INSERT INTO {quote(str(meta.db_table))} ({columns}) VALUES {', '.join([row] * rows)}"
            f" RETURNING {quote(str(meta.pk.column))}"
        )
        if rows <= KEPT_INSERT_ROWS:
            _inserts[key] = sql
    return sql


def rows_insert(model: type[Model], attnames: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """``bulk_create`` of rows given as values rather than instances: each row holds the values of
    ``attnames`` (attribute names, ``slot_id`` rather than ``slot``) in that order, and every other field
    takes what an instance made without it would store (its default; an ``auto_now`` or ``auto_now_add``
    field the time of this call, one for all the rows). The statement is ``instances_insert``'s; no primary
    keys come back. For the thousands of slots and answers of a campaign that nobody uses after their insert:
    making them into instances cost more CPU than writing them. A named field whose ``pre_save`` is its
    own (``auto_now``) is refused: its value would not be what ``save`` stores."""
    # A batch at a time: together, batches would pass the database's limit of parameters per statement.
    for write in rows_insert_writes(model, attnames, rows):
        writes_run([write])


def rows_insert_writes(
    model: type[Model], attnames: Sequence[str], rows: Sequence[Sequence[Any]]
) -> list[Write]:
    """``rows_insert``'s statements (one per batch of rows; none for no rows) as ``Write``s, for
    ``writes_run``."""
    if not rows:
        return []
    meta = model._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    batch = MAX_INSERT_PARAMETERS // len(fields)
    if len(rows) > batch:
        return [
            write
            for start in range(0, len(rows), batch)
            for write in rows_insert_writes(model, attnames, rows[start : start + batch])
        ]
    plain = _plain_fields(meta, fields)
    where = {attname: position for position, attname in enumerate(attnames)}
    now = timezone.now()
    # Per field: the row's value at ``index`` (with the types taken as they are, else the field's conversion),
    # or a constant already converted for the database.
    layout: list[tuple[int | None, tuple[type, ...], Field, Any]] = []
    for position, field in enumerate(fields):
        if field.attname in where:
            if type(field).pre_save is not Field.pre_save:
                raise ValueError(f"rows_insert: {meta.label}.{field.attname} has its own pre_save")
            layout.append((where.pop(field.attname), plain[position], field, None))
        elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            if not isinstance(field, models.DateTimeField):
                raise ValueError(f"rows_insert: {meta.label}.{field.attname} is not a DateTimeField")
            layout.append((None, (), field, field.get_db_prep_save(now, connection)))
        else:
            layout.append((None, (), field, field.get_db_prep_save(field.get_default(), connection)))
    if where:
        raise ValueError(f"rows_insert: {meta.label} has no field {sorted(where)}")
    params = [
        constant
        if index is None
        else value
        if kinds and type(value := row[index]) in kinds
        else field.get_db_prep_save(value, connection)
        for row in rows
        for index, kinds, field, constant in layout
    ]
    unnest = _unnest_insert_sql(meta, fields) if len(rows) > 1 else None
    if unnest is not None:
        # One array per column: the statement's text and its parameters do not grow with the rows.
        width = len(fields)
        columns = [params[position::width] for position in range(width)]
        return [Write(unnest, columns, label=meta.label)]
    return [Write(_insert_sql(meta, fields, len(rows)), params, label=meta.label, returning=True)]


def _unnest_insert_sql(meta: Any, fields: list[Field]) -> str | None:
    """On PostgreSQL, the INSERT of any number of rows as ``bulk_create`` writes it there (Django's
    ``InsertUnnest``): ``SELECT * FROM UNNEST`` of one array per column, so its text is one per model and
    its parameters one per column (psycopg converts a statement of more than 50 parameters anew on each
    call, 1.5 ms of CPU for a HIT build's slots); None elsewhere, or for a field Django would not unnest."""
    if connection.vendor != "postgresql":
        return None
    key = (connection.alias, connection.vendor, meta.label, "unnest")
    if key not in _inserts:
        plain = all(
            not hasattr(field, "get_placeholder")
            and (getattr(field, "target_field", field) if field.is_relation else field).get_internal_type()
            in connection.data_types
            for field in fields
        )
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(field.column)) for field in fields)
        # The types without their parameters, as Django's: varchar[], not varchar(1)[].
        arrays = ", ".join(f"(%s)::{str(field.db_type(connection)).split('(')[0]}[]" for field in fields)
        _inserts[key] = (
            f"INSERT INTO {quote(str(meta.db_table))} ({columns}) SELECT * FROM UNNEST({arrays})"
            if plain
            else ""
        )
    return _inserts[key] or None
