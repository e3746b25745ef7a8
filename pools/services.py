"""Writes of the pools app: creating collections and importing topics, passages, qrels and runs.

Every import is all or nothing: the file is validated line by line inside one transaction, and the first bad
line raises :class:`pools.trec.TrecFormatError` (``file:line: problem``) and rolls everything back. Rows are
written with ``bulk_create``/``bulk_update`` in batches, never one query per line. A run is validated by
streaming and stored as a file under MEDIA_ROOT (see :func:`run_import`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from django.core.files import File
from django.db import transaction

from pools import trec
from pools.models import Collection, GradedJudgment, Item, Run, Topic
from pools.trec import TrecFormatError

BATCH_SIZE = 2000
# A run name becomes part of a file name under MEDIA_ROOT (runs/<collection>/<name>.run).
RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


class ImportRejectedError(ValueError):
    """An import refused as a whole, for a reason that is not one line of the file (e.g. the run exists)."""


@dataclass(frozen=True)
class ImportResult:
    """What an import changed: rows created, rows whose values changed, rows already as in the file."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def collection_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """Create a collection. Strict collections refuse qrels and runs naming topics not imported yet."""
    collection = Collection(name=name, description=description, is_strict=is_strict)
    collection.full_clean()
    collection.save()
    return collection


def collection_get_or_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """The collection called ``name``, created with the given settings if it does not exist yet."""
    existing = Collection.objects.filter(name=name).first()
    return existing or collection_create(name=name, description=description, is_strict=is_strict)


@transaction.atomic
def topics_import_tsv(
    *, collection: Collection, path: str | os.PathLike[str], progress: bool = False
) -> ImportResult:
    """Import ``topic_id<TAB>question`` lines: new topics are created, the question of existing ones is replaced.

    A topic id repeated with a different question is an error naming both lines."""
    questions: dict[str, tuple[int, str]] = {}
    for line_number, topic_id, question in trec.iter_topics_tsv(path, progress=progress):
        _check_repeat(questions, topic_id, line_number, question, path=path, what="question")
        questions[topic_id] = (line_number, question)
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
            resolved[topic_id] = (line_number, question)
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


def _check_repeat(
    seen: dict[str, tuple[int, str]], key: str, line_number: int, value: str, *, path, what: str
) -> None:
    if key in seen and seen[key][1] != value:
        raise TrecFormatError(path, line_number, f"{key} repeats line {seen[key][0]} with a different {what}")


def _topics_upsert(collection: Collection, fields_by_topic: dict[str, dict]) -> ImportResult:
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


PASSAGE_FORMATS = {"tsv": trec.iter_passages_tsv, "jsonl": trec.iter_passages_jsonl}


def passage_format_for(path: str | os.PathLike[str]) -> str:
    """``"jsonl"`` for ``*.jsonl``/``*.json`` files, ``"tsv"`` otherwise."""
    return "jsonl" if Path(path).suffix.lower() in (".jsonl", ".json") else "tsv"


@transaction.atomic
def passages_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    format: str | None = None,
    progress: bool = False,
) -> ImportResult:
    """Import passages (``docid<TAB>text`` or JSONL ``{"id", "text"}``; ``format=None`` picks by extension):
    new docids become Items, the text of existing Items (e.g. created empty by a qrels import) is replaced.

    Streams the file in batches, so memory grows only with the set of docids seen, which is kept to report
    a docid repeated in the file as an error naming both lines."""
    format = format or passage_format_for(path)
    if format not in PASSAGE_FORMATS:
        raise ValueError(f"unknown passage format {format!r}; expected one of {', '.join(PASSAGE_FORMATS)}")
    first_lines: dict[str, int] = {}
    created = updated = unchanged = 0
    for batch in _batches(PASSAGE_FORMATS[format](path, progress=progress), BATCH_SIZE):
        texts: dict[str, str] = {}
        for line_number, docid, text in batch:
            if docid in first_lines:
                raise TrecFormatError(path, line_number, f"docid {docid} repeats line {first_lines[docid]}")
            first_lines[docid] = line_number
            texts[docid] = text
        existing = {
            item.docid: item for item in Item.objects.filter(collection=collection, docid__in=list(texts))
        }
        new_items, changed_items = [], []
        for docid, text in texts.items():
            item = existing.get(docid)
            if item is None:
                new_items.append(Item(collection=collection, docid=docid, text=text))
            elif item.text != text:
                item.text = text
                changed_items.append(item)
        Item.objects.bulk_create(new_items, batch_size=BATCH_SIZE)
        Item.objects.bulk_update(changed_items, ["text"], batch_size=BATCH_SIZE)
        created += len(new_items)
        updated += len(changed_items)
        unchanged += len(texts) - len(new_items) - len(changed_items)
    return ImportResult(created=created, updated=updated, unchanged=unchanged)


@transaction.atomic
def qrels_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    replace: bool = False,
    progress: bool = False,
) -> ImportResult:
    """Import graded judgments from a TREC qrels file (``topic Q0 docid grade``, float grades accepted).

    - a docid not in the collection becomes an Item with empty text (import the passages later);
    - a topic not in the collection is an error when the collection is strict, else it is created;
    - a line equal to a stored judgment changes nothing; a different grade for a stored (topic, item) is an
      error naming the line, unless ``replace`` (then the stored grade is overwritten).
    Stored judgments that the file does not mention are kept."""
    qrels, first_lines = trec.read_qrels_with_lines(path, progress=progress)
    topic_first_lines: dict[str, int] = {}
    for (topic_id, _), line_number in first_lines.items():
        topic_first_lines[topic_id] = min(line_number, topic_first_lines.get(topic_id, line_number))
    topic_pks = _topic_pks(collection, topic_first_lines, path=path)
    item_pks = _item_pks_creating(collection, {docid for grades in qrels.values() for docid in grades})

    stored: dict[tuple[int, int], GradedJudgment] = {
        (judgment.topic_id, judgment.item_id): judgment
        for judgment in GradedJudgment.objects.filter(
            topic_id__in=[topic_pks[topic_id] for topic_id in qrels]
        )
    }
    new_judgments, changed_judgments, conflicts, unchanged = [], [], [], 0
    for topic_id, grades in qrels.items():
        for docid, grade in grades.items():
            judgment = stored.get((topic_pks[topic_id], item_pks[docid]))
            if judgment is None:
                new_judgments.append(
                    GradedJudgment(topic_id=topic_pks[topic_id], item_id=item_pks[docid], grade=grade)
                )
            elif judgment.grade == grade:
                unchanged += 1
            elif replace:
                judgment.grade = grade
                changed_judgments.append(judgment)
            else:
                conflicts.append((first_lines[topic_id, docid], topic_id, docid, grade, judgment.grade))
    if conflicts:
        line_number, topic_id, docid, grade, stored_grade = min(conflicts)
        raise TrecFormatError(
            path,
            line_number,
            f"grade {grade:g} for topic {topic_id} docid {docid} conflicts with the stored grade {stored_grade:g} "
            f"({len(conflicts)} conflicting line(s); import with --replace to overwrite)",
        )
    GradedJudgment.objects.bulk_create(new_judgments, batch_size=BATCH_SIZE)
    GradedJudgment.objects.bulk_update(changed_judgments, ["grade"], batch_size=BATCH_SIZE)
    return ImportResult(created=len(new_judgments), updated=len(changed_judgments), unchanged=unchanged)


def _topic_pks(collection: Collection, topic_first_lines: dict[str, int], *, path) -> dict[str, int]:
    """Primary keys of the named topics; unknown ones are created, or refused with the first line naming
    them when the collection is strict."""
    known = dict(collection.topics.values_list("topic_id", "pk"))
    unknown = sorted(
        (line, topic_id) for topic_id, line in topic_first_lines.items() if topic_id not in known
    )
    if unknown and collection.is_strict:
        line_number, topic_id = unknown[0]
        raise TrecFormatError(
            path,
            line_number,
            f"unknown topic {topic_id}: collection {collection.name} is strict, so import its topics first "
            f"({len(unknown)} unknown topic(s) in this file)",
        )
    if unknown:
        Topic.objects.bulk_create(
            [Topic(collection=collection, topic_id=topic_id) for _, topic_id in unknown],
            batch_size=BATCH_SIZE,
        )
        known = dict(collection.topics.values_list("topic_id", "pk"))
    return known


def _item_pks_creating(collection: Collection, docids: set[str]) -> dict[str, int]:
    """Primary keys of the items with these docids, creating the missing ones with empty text."""
    pks: dict[str, int] = {}
    for batch in _batches(sorted(docids), BATCH_SIZE):
        found = dict(Item.objects.filter(collection=collection, docid__in=batch).values_list("docid", "pk"))
        missing = [docid for docid in batch if docid not in found]
        if missing:
            Item.objects.bulk_create([Item(collection=collection, docid=docid) for docid in missing])
            found.update(
                Item.objects.filter(collection=collection, docid__in=missing).values_list("docid", "pk")
            )
        pks.update(found)
    return pks


def run_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    name: str | None = None,
    replace: bool = False,
    progress: bool = False,
) -> Run:
    """Validate a TREC run by streaming it and store it, unchanged, as a file under MEDIA_ROOT.

    Memory stays constant in the number of lines (a run may hold tens of millions); what grows is the set
    of topic ids. The Run records the line and topic counts. ``name`` defaults to the file name without
    extension. Topics not in the collection are refused when it is strict and created otherwise. An existing
    run of the same name is an error unless ``replace``; its old file is deleted only once the new one is
    committed. If anything fails, the database and the media folder are left as they were."""
    name = name if name is not None else Path(path).stem
    if not RUN_NAME_PATTERN.match(name):
        raise ImportRejectedError(
            f"{path}: run name {name!r} must be 1-200 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"
        )
    if not replace and Run.objects.filter(collection=collection, name=name).exists():
        # Checked again under lock below; this only spares streaming a large file that would be refused.
        raise _run_exists_error(collection, name, path)
    line_count = 0
    topic_first_lines: dict[str, int] = {}
    for line in trec.iter_run(path, progress=progress):
        line_count += 1
        topic_first_lines.setdefault(line.topic_id, line.line_number)
    if line_count == 0:
        raise TrecFormatError(path, 1, "the run has no lines")

    saved_name = None
    try:
        with transaction.atomic():
            _topic_pks(collection, topic_first_lines, path=path)
            run = Run.objects.select_for_update().filter(collection=collection, name=name).first()
            if run is not None and not replace:
                raise _run_exists_error(collection, name, path)
            old_file_name = run.file.name if run is not None else None
            run = run or Run(collection=collection, name=name)
            with open(path, "rb") as handle:
                run.file.save(f"{name}.run", File(handle), save=False)
            saved_name = run.file.name
            run.line_count = line_count
            run.topic_count = len(topic_first_lines)
            run.save()
            if old_file_name and old_file_name != saved_name:
                storage = run.file.storage
                transaction.on_commit(lambda: storage.delete(old_file_name))
    except BaseException:
        if saved_name is not None:
            Run._meta.get_field("file").storage.delete(saved_name)
        raise
    return run


def _run_exists_error(collection: Collection, name: str, path) -> ImportRejectedError:
    return ImportRejectedError(
        f"{path}: collection {collection.name} already has a run {name!r} (import with --replace to overwrite)"
    )


@dataclass(frozen=True)
class DemoLoadResult:
    collection: Collection
    topics: ImportResult
    passages: ImportResult
    qrels: ImportResult
    runs: list[Run]


DEMO_COLLECTION_NAME = "demo"


def demo_load(
    *, directory: str | os.PathLike[str], reset: bool = False, progress: bool = False
) -> DemoLoadResult:
    """Load the demo collection shipped in ``directory`` (``topics.tsv``, ``passages.jsonl``,
    ``qrels.graded.txt``, ``runs/*.run``) into the strict collection ``demo``.

    Idempotent: loading again updates what changed and leaves the rest (runs are replaced). ``reset``
    deletes the collection first, with everything that hangs off it. ``qrels.preference.txt`` is not a
    table: the judging simulator reads it from the directory."""
    directory = Path(directory)
    paths = {
        "topics": directory / "topics.tsv",
        "passages": directory / "passages.jsonl",
        "qrels": directory / "qrels.graded.txt",
    }
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise ImportRejectedError(f"the demo collection is incomplete: missing {', '.join(missing)}")
    saved_runs: list[Run] = []
    try:
        with transaction.atomic():
            if reset:
                existing = Collection.objects.filter(name=DEMO_COLLECTION_NAME).first()
                if existing is not None:
                    collection_delete(collection=existing)
            collection = collection_get_or_create(
                name=DEMO_COLLECTION_NAME,
                description="Questions and passages written for toppref's demo, graded 0-4 (shipped in demo/).",
                is_strict=True,
            )
            topics = topics_import_tsv(collection=collection, path=paths["topics"])
            passages = passages_import(collection=collection, path=paths["passages"], format="jsonl")
            qrels = qrels_import(collection=collection, path=paths["qrels"], replace=True)
            for run_path in sorted((directory / "runs").glob("*.run")):
                saved_runs.append(
                    run_import(collection=collection, path=run_path, replace=True, progress=progress)
                )
    except BaseException:
        # run_import removes its own file when it fails; these are the runs an outer rollback undid.
        for run in saved_runs:
            run.file.storage.delete(run.file.name)
        raise
    return DemoLoadResult(collection, topics, passages, qrels, saved_runs)


def run_delete(*, run: Run) -> None:
    """Delete a run; its file goes once the deletion is committed."""
    file_name, storage = run.file.name, run.file.storage
    run.delete()
    if file_name:
        transaction.on_commit(lambda: storage.delete(file_name))


def collection_delete(*, collection: Collection) -> None:
    """Delete a collection with its topics, items, judgments and runs; the run files go once committed."""
    file_names = list(collection.runs.values_list("file", flat=True))
    collection.delete()
    storage = Run._meta.get_field("file").storage
    transaction.on_commit(lambda: [storage.delete(file_name) for file_name in file_names])


def _batches(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch
