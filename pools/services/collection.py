"""Creating, copying and deleting collections. A collection has an owner (a researcher; none: staff's) who
alone, with staff, may change it (docs/decisions.md, "Tenancy"); a change to a version that a started campaign
uses makes a new version (``pools.services.versions``, docs/decisions.md, "Collection versions")."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import transaction

from pools.models import Collection, Run
from pools.services.runs import run_file_delete_if_unused, run_file_name
from pools.services.versions import collection_contents_copy, collection_next_version

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
    collection = Collection(
        name=name,
        description=description,
        is_strict=is_strict,
        owner=owner,
        version=collection_next_version(name),
    )
    _collection_validate(collection)
    collection.save()
    return collection


def _collection_validate(collection: Collection) -> None:
    """``full_clean``, with a taken name reported on the ``name`` field (the name is unique among current
    versions only, a condition Django reports for the whole row)."""
    errors: dict[str, list[str]] = {}
    try:
        collection.full_clean(validate_constraints=False)
    except ValidationError as error:
        errors = error.message_dict
    if Collection.objects.current().filter(name=collection.name).exclude(pk=collection.pk).exists():
        errors.setdefault("name", []).append("Collection with this Name already exists.")
    if errors:
        raise ValidationError(errors)


def collection_get_or_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """The current version of the collection called ``name``, created with the given settings if there is
    none."""
    existing = Collection.objects.current().filter(name=name).first()
    return existing or collection_create(name=name, description=description, is_strict=is_strict)


@transaction.atomic
def collection_copy(
    *, source: Collection, name: str, owner=None, description: str | None = None
) -> Collection:
    """A new collection ``name`` owned by ``owner`` with the topics, passages and graded judgments of
    ``source`` (any version) and its own runs (not its campaigns' uploads; the run files are copied): a
    collection of one's own to change, from any collection one can read. A taken or bad name is a
    ``ValidationError``."""
    copy = Collection(
        name=name,
        description=source.description if description is None else description,
        is_strict=source.is_strict,
        owner=owner,
        version=collection_next_version(name),
    )
    _collection_validate(copy)
    copy.save()
    collection_contents_copy(source=source, target=copy)
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
    """Delete a collection version with its topics, items, judgments, runs and campaigns; the run files go once
    committed, except those that other rows read (another version's runs, or runs imported since under the
    same names: a collection deleted and loaded again). Older versions that no campaign uses go with the
    current one; those a campaign uses stay with it."""
    file_names = list(collection.runs.values_list("file", flat=True))
    collection.delete()
    if collection.is_current:
        for version in Collection.objects.filter(
            name=collection.name, is_current=False, campaigns__isnull=True
        ):
            collection_delete(collection=version)

    def delete_files() -> None:
        for file_name in file_names:
            run_file_delete_if_unused(file_name)

    transaction.on_commit(delete_files)


def collection_version_release(*, collection: Collection) -> bool:
    """Delete ``collection`` if it is an older version that no campaign uses any more (it was kept only for
    the campaigns that started on it). Returns whether it went."""
    unused = Collection.objects.filter(pk=collection.pk, is_current=False, campaigns__isnull=True).first()
    if unused is None:
        return False
    collection_delete(collection=unused)
    return True
