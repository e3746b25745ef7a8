"""Importing topics: TSV questions, TREC CAsT conversations, and conversation turns for known topics."""

from __future__ import annotations

import os

from django.db import transaction

from pools import trec
from pools.models import Collection, Topic
from pools.services.importing import BATCH_SIZE, ImportResult
from pools.services.versions import collection_change
from trecio import TrecFormatError

TOPIC_FORMATS = ("tsv", "cast", "turns")


def topic_format_for(path: str | os.PathLike[str]) -> str:
    """``"cast"`` for ``*.json`` and ``*.json.gz`` files, ``"tsv"`` otherwise (``"turns"`` is never guessed)."""
    return "cast" if os.fspath(path).lower().removesuffix(".gz").endswith(".json") else "tsv"


def topics_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    format: str | None = None,
    resolved_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> ImportResult:
    """Import topics in one of :data:`TOPIC_FORMATS` (``format=None`` picks by extension, see
    :func:`topic_format_for`) with :func:`topics_import_tsv`, :func:`topics_import_cast` or
    :func:`topics_import_turns`. ``resolved_path`` only goes with CAsT JSON."""
    format = format or topic_format_for(path)
    if format not in TOPIC_FORMATS:
        raise ValueError(f"unknown topic format {format!r}; expected one of {', '.join(TOPIC_FORMATS)}")
    if resolved_path is not None and format != "cast":
        raise ValueError("resolved questions only apply to CAsT JSON topics")
    if format == "cast":
        return topics_import_cast(collection=collection, path=path, resolved_path=resolved_path)
    if format == "turns":
        return topics_import_turns(collection=collection, path=path)
    return topics_import_tsv(collection=collection, path=path, progress=progress)


@transaction.atomic
def topics_import_tsv(
    *, collection: Collection, path: str | os.PathLike[str], progress: bool = False
) -> ImportResult:
    """Import ``topic_id<TAB>question`` lines: new topics are created, the question of existing ones is replaced.

    A topic id repeated with a different question is an error naming both lines."""
    questions: dict[str, tuple[int, str]] = {}
    for line_number, topic_id, question in trec.iter_topics_tsv(path, progress=progress):
        _check_repeat(questions, topic_id, line_number, question, path=path, what="question")
        questions.setdefault(topic_id, (line_number, question))
    return _topics_upsert(
        collection, {topic_id: {"question": question} for topic_id, (_, question) in questions.items()}
    )


@transaction.atomic
def topics_import_cast(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    resolved_path: str | os.PathLike[str] | None = None,
) -> ImportResult:
    """Import TREC CAsT topics: one topic ``{conversation}_{turn}`` per turn of the JSON file, keeping the
    conversation id, the turn number and the raw utterance. The question shown to assessors is the manually
    resolved rewrite from ``resolved_path`` (``topic_id<TAB>question``) when given, else the raw utterance,
    which on its own may be ambiguous ("Is it treatable?"). A resolved question for a turn that is not in
    the JSON is an error on its line of the resolved file."""
    turns = trec.read_cast_topics(path)
    resolved: dict[str, tuple[int, str]] = {}
    if resolved_path is not None:
        known = {turn.topic_id for turn in turns}
        for line_number, topic_id, question in trec.iter_topics_tsv(resolved_path):
            if topic_id not in known:
                raise TrecFormatError(resolved_path, line_number, f"topic {topic_id} is not a turn of {path}")
            _check_repeat(resolved, topic_id, line_number, question, path=resolved_path, what="question")
            resolved.setdefault(topic_id, (line_number, question))
    fields = {
        turn.topic_id: {
            "question": resolved.get(turn.topic_id, (0, turn.utterance))[1],
            "conversation_id": turn.conversation_id,
            "turn": turn.turn,
            "utterance": turn.utterance,
        }
        for turn in turns
    }
    return _topics_upsert(collection, fields)


@transaction.atomic
def topics_import_turns(*, collection: Collection, path: str | os.PathLike[str]) -> ImportResult:
    """Attach conversation, turn and raw utterance to topics already imported, from a
    ``topic_id<TAB>conversation_id<TAB>turn<TAB>raw utterance`` file; the question is left as it is. A
    topic that is not in the collection, or that appears twice, is an error on its line."""
    return collection_change(collection, lambda version: _turns_store(version, path))


def _turns_store(collection: Collection, path: str | os.PathLike[str]) -> ImportResult:
    known = set(collection.topics.values_list("topic_id", flat=True))
    fields: dict[str, dict] = {}
    first_lines: dict[str, int] = {}
    for turn in trec.iter_turns_tsv(path):
        if turn.topic_id not in known:
            raise TrecFormatError(
                path, turn.line_number, f"unknown topic {turn.topic_id}: import the topics first"
            )
        if turn.topic_id in first_lines:
            raise TrecFormatError(
                path, turn.line_number, f"topic {turn.topic_id} repeats line {first_lines[turn.topic_id]}"
            )
        first_lines[turn.topic_id] = turn.line_number
        fields[turn.topic_id] = {
            "conversation_id": turn.conversation_id,
            "turn": turn.turn,
            "utterance": turn.utterance,
        }
    return _topics_store(collection, fields)


def _check_repeat(
    seen: dict[str, tuple[int, str]], key: str, line_number: int, value: str, *, path, what: str
) -> None:
    if key in seen and seen[key][1] != value:
        raise TrecFormatError(path, line_number, f"{key} repeats line {seen[key][0]} with a different {what}")


def _topics_upsert(collection: Collection, fields_by_topic: dict[str, dict]) -> ImportResult:
    """New topics are created and changed ones updated, in a new version of a collection that a started
    campaign uses (``pools.services.versions.collection_change``)."""
    return collection_change(collection, lambda version: _topics_store(version, fields_by_topic))


def _topics_store(collection: Collection, fields_by_topic: dict[str, dict]) -> ImportResult:
    existing = {topic.topic_id: topic for topic in collection.topics.all()}
    new_topics, changed_topics, unchanged = [], [], 0
    for topic_id, fields in fields_by_topic.items():
        topic = existing.get(topic_id)
        if topic is None:
            new_topics.append(Topic(collection=collection, topic_id=topic_id, **fields))
        elif any(getattr(topic, name) != value for name, value in fields.items()):
            for name, value in fields.items():
                setattr(topic, name, value)
            changed_topics.append(topic)
        else:
            unchanged += 1
    Topic.objects.bulk_create(new_topics, batch_size=BATCH_SIZE)
    field_names = sorted({name for fields in fields_by_topic.values() for name in fields})
    if changed_topics:
        Topic.objects.bulk_update(changed_topics, field_names, batch_size=BATCH_SIZE)
    return ImportResult(created=len(new_topics), updated=len(changed_topics), unchanged=unchanged)
