"""``toppref`` subcommands of the pools app (see config/cli.py): ``thin`` (files only), ``import`` and
``collection`` (database)."""

from __future__ import annotations

import argparse
import sys

from config.cli import DataError, UsageError, bounded_int, finite_float, input_file, warn
from pools.thinning import DEFAULT_ANSWER_GRADE, SCHEMES, thin_qrels


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add this app's subcommands (only the one named ``only`` when given; see config/cli.py)."""
    for name, add in (
        ("thin", _register_thin),
        ("import", _register_import),
        ("collection", _register_collection),
    ):
        if only is None or only == name:
            add(subparsers)


def _register_thin(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "thin",
        description=(
            "Write the candidate pool of every topic as TREC qrels lines 'topic Q0 docid grade' to stdout: "
            "whole grades are taken from the highest down until the pool holds at least K items; grade <= 0 "
            "is never taken. Topics come in plain string order (as trec_eval sorts them, so 31_10 < 31_2), "
            "then grades descending, then docids. A one-line summary goes to stderr."
        ),
    )
    parser.add_argument(
        "-k", type=bounded_int(1), required=True, metavar="K", help="depth of the top-k to be judged"
    )
    parser.add_argument("qrels", metavar="QRELS", help="TREC qrels file 'topic Q0 docid grade'")
    parser.add_argument(
        "--scheme",
        choices=SCHEMES,
        default="graded",
        help="graded: whole grades from the top (section 4.1, default); abc: the three-grade first pass of "
        "section 7: A (grade >= --answer-grade) then, if fewer than K, B (other positive grades)",
    )
    parser.add_argument(
        "--answer-grade",
        type=finite_float,
        default=None,
        metavar="G",
        help="lowest grade that counts as A ('answers the question') with --scheme abc (default 2)",
    )
    parser.set_defaults(handler=thin_command, needs_django=False)


def thin_command(args: argparse.Namespace) -> int:
    from pools.trec import TrecFormatError, read_qrels

    if args.answer_grade is not None and args.scheme != "abc":
        raise UsageError("--answer-grade only applies to --scheme abc")
    input_file(args.qrels)
    try:
        qrels = read_qrels(args.qrels)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    except OSError as error:
        raise DataError(f"{args.qrels}: {error.strerror}") from None
    if not qrels:
        warn("thin", f"{args.qrels} holds no judgments: no candidate pool to write")
    answer_grade = DEFAULT_ANSWER_GRADE if args.answer_grade is None else args.answer_grade
    pools = thin_qrels(qrels, args.k, scheme=args.scheme, answer_grade=answer_grade)
    from trecio import write_qrels

    write_qrels(
        sys.stdout,
        (
            (topic_id, docid, grade)
            for topic_id in sorted(pools)
            for docid, grade in sorted(pools[topic_id].items(), key=lambda entry: (-entry[1], entry[0]))
        ),
    )
    sys.stdout.flush()
    print(thin_summary(qrels, pools, k=args.k), file=sys.stderr)
    return 0


def thin_summary(qrels: dict, pools: dict, *, k: int) -> str:
    """One line: topics with a pool, candidates, largest pool and its topic (the first in sorted order if
    several tie), how many judgments were positive (the pool thinning chose from), and how many judged topics
    had no positive grade."""
    candidates = sum(len(pool) for pool in pools.values())
    text = f"thin -k {k}: {len(pools)} topics, {candidates} candidates"
    if pools:
        largest_topic = min(pools, key=lambda topic_id: (-len(pools[topic_id]), topic_id))
        text += f", largest pool {len(pools[largest_topic])} (topic {largest_topic})"
    judged = sum(len(grades) for grades in qrels.values())
    positive = sum(1 for grades in qrels.values() for grade in grades.values() if grade > 0)
    text += f"; {positive} of {judged} judgments positive"
    left_out = len(qrels) - len(pools)
    if left_out:
        text += f"; {left_out} {'topic' if left_out == 1 else 'topics'} without a positive grade left out"
    return text


def _register_import(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import",
        help="import topics, passages, qrels or a run into a collection (all or nothing)",
        description="Each import is one transaction: the first bad line aborts it with file:line: problem "
        "and leaves the database as it was.",
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    topics = kinds.add_parser(
        "topics",
        help="topics: TSV 'topic_id<TAB>question', TREC CAsT JSON, or conversation turns of known topics",
    )
    _add_common_import_arguments(topics)
    topics.add_argument(
        "--format",
        choices=("tsv", "cast", "turns"),
        default=None,
        help="default: cast for *.json, tsv otherwise; turns: 'topic_id<TAB>conversation_id<TAB>turn<TAB>raw "
        "utterance' for topics already imported",
    )
    topics.add_argument(
        "--resolved",
        metavar="TSV",
        help="with CAsT JSON: 'topic_id<TAB>question' file of manually resolved questions shown to assessors",
    )

    passages = kinds.add_parser("passages", help='passages: TSV \'docid<TAB>text\' or JSONL {"id","text"}')
    _add_common_import_arguments(passages)
    passages.add_argument(
        "--format",
        choices=("tsv", "jsonl"),
        default=None,
        help="default: jsonl for *.jsonl/*.json, tsv otherwise",
    )

    qrels = kinds.add_parser("qrels", help="graded judgments: TREC qrels 'topic Q0 docid grade'")
    _add_common_import_arguments(qrels)
    qrels.add_argument("--replace", action="store_true", help="overwrite stored grades that the file changes")

    run = kinds.add_parser("run", help="a TREC run 'topic Q0 docid rank score tag', stored as a file")
    _add_common_import_arguments(run)
    run.add_argument("--name", help="run name (default: the file name without extension)")
    run.add_argument("--replace", action="store_true", help="replace a run of the same name")

    for kind_parser in (topics, passages, qrels, run):
        kind_parser.set_defaults(handler=import_command, needs_django=True)


def _add_common_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("collection", metavar="COLLECTION", help="collection name (see 'toppref collection')")
    parser.add_argument("path", metavar="PATH", help="file to import")
    parser.add_argument(
        "--create",
        choices=("strict", "lenient"),
        help="create the collection if it does not exist; strict refuses qrels/runs naming unknown topics",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def import_command(args: argparse.Namespace) -> int:
    from django.core.exceptions import ValidationError

    from pools import services
    from pools.models import Collection
    from pools.services.topics import topic_format_for
    from pools.trec import TrecFormatError

    prefix = f"toppref import {args.kind}"
    if args.kind == "topics" and args.resolved and (args.format or topic_format_for(args.path)) != "cast":
        print(f"{prefix}: --resolved only applies to CAsT JSON topics", file=sys.stderr)
        return 2
    collection = Collection.objects.current().filter(name=args.collection).first()
    if collection is None and not args.create:
        print(
            f"{prefix}: no collection {args.collection!r} (create it with 'toppref collection create' or --create)",
            file=sys.stderr,
        )
        return 1
    try:
        if collection is None:
            collection, message = _create_and_import(args, progress=not args.quiet)
        else:
            message = _import_file(args, collection, progress=not args.quiet)
    except ValidationError as error:
        print(f"{prefix}: {validation_problems(error)} (nothing imported)", file=sys.stderr)
        return 1
    except (TrecFormatError, services.ImportRejectedError) as error:
        print(f"{prefix}: {error} (nothing imported)", file=sys.stderr)
        return 1
    except OSError as error:
        print(
            f"{prefix}: {error.filename or args.path}: {error.strerror} (nothing imported)", file=sys.stderr
        )
        return 1
    print(f"{collection.name}: {message}")
    return 0


def _create_and_import(args: argparse.Namespace, *, progress: bool) -> tuple:
    """``--create``: the new collection and the import's message; the collection is deleted again if the
    import fails. Not one transaction: a run is validated outside any (see ``run_import``), and on SQLite an
    open transaction holds the write lock for as long as a large file takes to read."""
    from pools import services

    collection = services.collection_create(name=args.collection, is_strict=args.create == "strict")
    try:
        return collection, _import_file(args, collection, progress=progress)
    except BaseException:
        services.collection_delete(collection=collection)
        raise


def _import_file(args: argparse.Namespace, collection, *, progress: bool) -> str:
    from pools import services

    if args.kind == "topics":
        result = services.topics_import(
            collection=collection,
            path=args.path,
            format=args.format,
            resolved_path=args.resolved,
            progress=progress,
        )
        return f"topics: {result}"
    if args.kind == "passages":
        result = services.passages_import(
            collection=collection, path=args.path, format=args.format, progress=progress
        )
        return f"passages: {result}"
    if args.kind == "qrels":
        result = services.qrels_import(
            collection=collection, path=args.path, replace=args.replace, progress=progress
        )
        return f"graded judgments: {result}"
    run = services.run_import(
        collection=collection, path=args.path, name=args.name, replace=args.replace, progress=progress
    )
    return f"run {run.name}: {run.line_count} lines over {run.topic_count} topics, stored as {run.file.name}"


def validation_problems(error) -> str:
    """A model ValidationError as ``field: message; field: message``."""
    return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())


def _register_collection(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("collection", help="create or list collections")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    create = actions.add_parser("create", help="create a collection")
    create.add_argument("name", metavar="NAME", help="a slug: letters, digits, '-' and '_'")
    create.add_argument("--description", default="")
    create.add_argument(
        "--lenient",
        action="store_true",
        help="qrels and runs may create topics (default: strict, they may not)",
    )
    create.set_defaults(handler=collection_create_command, needs_django=True)
    listing = actions.add_parser("list", help="list collections with their counts")
    listing.set_defaults(handler=collection_list_command, needs_django=True)


def collection_create_command(args: argparse.Namespace) -> int:
    from django.core.exceptions import ValidationError

    from pools import services

    try:
        collection = services.collection_create(
            name=args.name, description=args.description, is_strict=not args.lenient
        )
    except ValidationError as error:
        print(f"toppref collection create: {validation_problems(error)}", file=sys.stderr)
        return 1
    print(f"created collection {collection.name} ({'strict' if collection.is_strict else 'lenient'})")
    return 0


def collection_list_command(args: argparse.Namespace) -> int:
    from pools.selectors import collection_list_with_counts

    for collection in collection_list_with_counts():
        print(
            f"{collection.name}\t{'strict' if collection.is_strict else 'lenient'}\t"
            f"{collection.topic_count} topics\t{collection.item_count} items\t{collection.run_count} runs"
        )
    return 0
