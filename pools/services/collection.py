"""Creating, copying and deleting collections. A collection has an owner (a researcher; none: staff's) who
alone, with staff, may change it; once a started campaign uses it, it is changed only in a copy (a new
version), see ``collection_copy`` and docs/decisions.md, "Tenancy"."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import connection, transaction

from pools.models import Collection, GradedJudgment, Item, Run, Topic
from pools.services.runs import run_file_delete_if_unused, run_file_name

RESEARCHERS_GROUP = "researchers"


class CollectionOwnerError(ValueError):
    """An owner who may not own a collection (not a researcher, not staff, or no such user)."""


def collection_owner_get(*, username: str):
    """The user called ``username`` if they may own collections (a researcher or staff), else
    ``CollectionOwnerError`` naming the problem in one line."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CollectionOwnerError(f"owner: no user named {username!r}")
    if not (user.is_staff or user.groups.filter(name=RESEARCHERS_GROUP).exists()):
        raise CollectionOwnerError(
            f"owner: user {username!r} is neither a researcher (the researchers group) nor staff"
        )
    return user


def collection_create(*, name: str, description: str = "", is_strict: bool = True, owner=None) -> Collection:
    """Create a collection. Strict collections refuse qrels and runs naming topics not imported yet."""
    collection = Collection(name=name, description=description, is_strict=is_strict, owner=owner)
    collection.full_clean()
    collection.save()
    return collection


def collection_get_or_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """The collection called ``name``, created with the given settings if it does not exist yet."""
    existing = Collection.objects.filter(name=name).first()
    return existing or collection_create(name=name, description=description, is_strict=is_strict)


@transaction.atomic
def collection_copy(
    *, source: Collection, name: str, owner=None, description: str | None = None
) -> Collection:
    """A new collection ``name`` owned by ``owner`` with the topics, passages and graded judgments of
    ``source`` and its own runs (not its campaigns' uploads; the run files are copied). This is how a
    collection that a started campaign uses is changed: copy it, change the copy, run a new campaign on it
    (the old campaign keeps what its workers saw). A taken or bad name is a ``ValidationError``."""
    copy = Collection(
        name=name,
        description=source.description if description is None else description,
        is_strict=source.is_strict,
        owner=owner,
    )
    copy.full_clean()
    copy.save()
    # INSERT ... SELECT in the database: a collection may hold millions of passages, which never pass
    # through Python here (memory stays flat whatever the size).
    topic, item, grade = Topic._meta.db_table, Item._meta.db_table, GradedJudgment._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {topic} (collection_id, topic_id, question, conversation_id, turn, utterance) "
            f"SELECT %s, topic_id, question, conversation_id, turn, utterance FROM {topic} WHERE collection_id = %s",
            [copy.pk, source.pk],
        )
        cursor.execute(
            f"INSERT INTO {item} (collection_id, docid, text) "
            f"SELECT %s, docid, text FROM {item} WHERE collection_id = %s",
            [copy.pk, source.pk],
        )
        cursor.execute(
            f"INSERT INTO {grade} (topic_id, item_id, grade) "
            f"SELECT new_topic.id, new_item.id, old.grade FROM {grade} old "
            f"JOIN {topic} old_topic ON old_topic.id = old.topic_id "
            f"JOIN {item} old_item ON old_item.id = old.item_id "
            f"JOIN {topic} new_topic ON new_topic.collection_id = %s AND new_topic.topic_id = old_topic.topic_id "
            f"JOIN {item} new_item ON new_item.collection_id = %s AND new_item.docid = old_item.docid "
            f"WHERE old_topic.collection_id = %s",
            [copy.pk, copy.pk, source.pk],
        )
    storage = Run._meta.get_field("file").storage
    stored: list[str] = []
    try:
        for run in source.runs.filter(campaign__isnull=True, status=Run.Status.READY).order_by("name"):
            with run.file.open("rb") as handle:
                file_name = storage.save(run_file_name(collection=copy, name=run.name), File(handle))
            stored.append(file_name)
            Run.objects.create(
                collection=copy,
                name=run.name,
                file=file_name,
                line_count=run.line_count,
                topic_count=run.topic_count,
            )
    except BaseException:
        for file_name in stored:
            storage.delete(file_name)
        raise
    return copy


def collection_validation_message(error: ValidationError) -> str:
    """One line naming the fields of a refused collection (``name: ...``)."""
    return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())


def collection_delete(*, collection: Collection) -> None:
    """Delete a collection with its topics, items, judgments and runs; the run files go once committed, except
    those that runs imported since under the same names read (a collection deleted and loaded again)."""
    file_names = list(collection.runs.values_list("file", flat=True))
    collection.delete()

    def delete_files() -> None:
        for file_name in file_names:
            run_file_delete_if_unused(file_name)

    transaction.on_commit(delete_files)
