"""Versions of a collection: a started campaign keeps the version it started on, and a change to that version is
made in a new one (copy on write, docs/decisions.md, "Collection versions").

A version is a row of ``Collection`` with its own topics, items, grades and runs, so every reader keeps
selecting by ``collection_id`` as before and never picks a version. The current version carries the name for
imports, the API and new campaigns; older ones live on while a campaign uses them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from django.db import connection, transaction

from pools.models import Collection, GradedJudgment, Item, Run, Topic
from pools.services.importing import ImportResult


def collection_started(collection: Collection) -> bool:
    """Whether a campaign past its draft uses this version (the reverse relation of ``judging.Campaign``: the
    pools app does not import the judging app)."""
    return collection.campaigns.exclude(status="draft").exists()


def collection_current(collection: Collection) -> Collection:
    """The current version of ``collection``'s name (``collection`` itself when its name has none left)."""
    if collection.pk is None:
        return collection
    return Collection.objects.current().filter(name=collection.name).first() or collection


def collection_lock_current(collection: Collection) -> Collection:
    """The current version of ``collection``'s name, locked for the rest of the transaction: imports and
    campaign starts take this lock, so a campaign never starts on a version an import is changing. A version
    that is no longer current stands for its name's current one (an import chained after one that made a
    new version goes on into it)."""
    if collection.is_current:
        locked = Collection.objects.select_for_update().filter(pk=collection.pk, is_current=True).first()
        if locked is not None:
            return locked
    return Collection.objects.select_for_update().current().get(name=collection.name)


def collection_contents_copy(*, source: Collection, target: Collection) -> None:
    """Copy the topics, items and graded judgments of ``source`` into the empty ``target``.

    INSERT ... SELECT in the database: a collection may hold millions of passages, which never pass through
    Python here (memory stays flat whatever the size)."""
    topic, item, grade = Topic._meta.db_table, Item._meta.db_table, GradedJudgment._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {topic} (collection_id, topic_id, question, conversation_id, turn, utterance) "
            f"SELECT %s, topic_id, question, conversation_id, turn, utterance FROM {topic} WHERE collection_id = %s",
            [target.pk, source.pk],
        )
        cursor.execute(
            f"INSERT INTO {item} (collection_id, docid, text) "
            f"SELECT %s, docid, text FROM {item} WHERE collection_id = %s",
            [target.pk, source.pk],
        )
        cursor.execute(
            f"INSERT INTO {grade} (topic_id, item_id, grade) "
            f"SELECT new_topic.id, new_item.id, old.grade FROM {grade} old "
            f"JOIN {topic} old_topic ON old_topic.id = old.topic_id "
            f"JOIN {item} old_item ON old_item.id = old.item_id "
            f"JOIN {topic} new_topic ON new_topic.collection_id = %s AND new_topic.topic_id = old_topic.topic_id "
            f"JOIN {item} new_item ON new_item.collection_id = %s AND new_item.docid = old_item.docid "
            f"WHERE old_topic.collection_id = %s",
            [target.pk, target.pk, source.pk],
        )


def collection_next_version(name: str) -> int:
    """The version number a new row called ``name`` takes: one past every row of that name, deleted
    lineages' surviving versions included."""
    latest = (
        Collection.objects.filter(name=name).order_by("-version").values_list("version", flat=True).first()
    )
    return (latest or 0) + 1


@transaction.atomic
def collection_version_create(*, collection: Collection) -> Collection:
    """A new current version of the current ``collection``: its topics, items, grades and runs (rows reading
    the same run files, which are never rewritten in place: a version writes its own, see
    ``run_file_name``). Draft campaigns move to it with their uploaded runs (they start on what the owner has
    now); started campaigns stay on ``collection``, which stops being current."""
    Collection.objects.filter(pk=collection.pk).update(is_current=False)
    version = Collection.objects.create(
        name=collection.name,
        description=collection.description,
        owner_id=collection.owner_id,
        is_strict=collection.is_strict,
        version=collection_next_version(collection.name),
        previous=collection,
    )
    collection_contents_copy(source=collection, target=version)
    Run.objects.bulk_create(
        [
            Run(
                collection=version,
                name=run.name,
                file=run.file.name,
                line_count=run.line_count,
                topic_count=run.topic_count,
                status=run.status,
                progress=run.progress,
                error=run.error,
                uploaded_by_id=run.uploaded_by_id,
            )
            for run in collection.runs.filter(campaign__isnull=True).order_by("name")
        ]
    )
    drafts = list(collection.campaigns.filter(status="draft").values_list("pk", flat=True))
    collection.campaigns.filter(pk__in=drafts).update(collection=version)
    Run.objects.filter(campaign_id__in=drafts).update(collection=version)
    collection.is_current = False
    return version


def collection_change(collection: Collection, change: Callable[[Collection], ImportResult]) -> ImportResult:
    """Apply ``change`` (an import) to the current version of ``collection`` inside the caller's transaction.

    On a version that a started campaign uses, the change is made in a new version, whoever runs the
    campaign: their workers saw, and their results rest on, the old one, which stays as it was. A change
    that changes nothing (loading the same file again) leaves no new version behind. The result says which
    version took the change (``ImportResult.version``, ``new_version`` when one was made)."""
    current = collection_lock_current(collection)
    if not collection_started(current):
        return replace(change(current), version=current.version)
    savepoint = transaction.savepoint()
    version = collection_version_create(collection=current)
    result = change(version)
    if not (result.created or result.updated):
        transaction.savepoint_rollback(savepoint)
        return replace(result, version=current.version)
    transaction.savepoint_commit(savepoint)
    return replace(result, version=version.version, new_version=True)
