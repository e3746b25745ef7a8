"""The exclusion rule, defined once: a worker may not work on a campaign when excluded globally
(``Worker.is_excluded``, staff's) or by the campaign's owner (a ``WorkerExclusion`` of that owner); another
owner's exclusions do not count, and a campaign with no owner (staff's) is closed to globally excluded workers
only (docs/decisions.md, "Tenancy"; "Assessing top-k preferences", section 4.3: workers failing a challenge
"were paid but excluded").

The rule is a SQL condition (``worker_excluded_sql``) because the pair page's plain-SQL read of the held
assignment (``assignment_held``) embeds it; the services' check (``worker_is_excluded``) runs the same
condition for one worker (``worker_is_excluded_by``), so the two cannot drift apart."""

from __future__ import annotations

from django.db import connection

from judging.models import Worker, WorkerExclusion


def worker_excluded_sql(*, worker: str, owner_id: str) -> str:
    """The rule as a SQL condition, true when the worker whose row is ``worker`` (a table or alias of
    ``judging_worker``) is excluded globally or by the owner ``owner_id`` (a SQL expression: a column such as
    ``c.owner_id``, or ``%s``). A NULL owner matches no exclusion, so the condition is never NULL."""
    return (
        f"({worker}.is_excluded OR EXISTS (SELECT 1 FROM {WorkerExclusion._meta.db_table} x"
        f" WHERE x.worker_id = {worker}.id AND x.owner_id = {owner_id}))"
    )


def worker_is_excluded_by(*, worker_id: int, owner_id: int | None) -> bool:
    """Whether the worker ``worker_id`` is excluded for the campaigns of owner ``owner_id`` (None: a campaign
    with no owner), as stored: ``worker_excluded_sql`` in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {worker_excluded_sql(worker='w', owner_id='%s')} FROM {Worker._meta.db_table} w"
            " WHERE w.id = %s",
            [owner_id, worker_id],
        )
        row = cursor.fetchone()
    return bool(row and row[0])
