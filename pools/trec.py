"""Streaming readers for the files a judging project starts from: TREC qrels and runs, topics (TSV and the
TREC CAsT JSON) and passages (TSV and JSONL). Pure Python, no Django.

Every reader validates as it goes and raises :class:`trecio.TrecFormatError` naming the file, the 1-based line
and the problem at the first bad line, so an importer can abort before it has changed anything. Readers are
generators over the file (except :func:`read_qrels` and :func:`read_cast_topics`, which need the whole file to
check it), so a run of tens of millions of lines is read in constant memory.

The line rules (UTF-8 with an optional byte-order mark, ASCII space and tab between columns, ``*.gz``, the
database's limits on ids and integers) are :mod:`trecio.text`'s, shared with the columnar reader
``metrics.core.readers``; the package docstring of :mod:`trecio` says which reader serves which job.
``progress=True`` shows a tqdm bar on stderr that advances by bytes read.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from trecio import TrecFormatError, format_value
from trecio.text import (
    MAX_DOCID_LENGTH,
    MAX_INTEGER,
    MAX_TOPIC_ID_LENGTH,
    UTF8_BYTE_ORDER_MARK,
    check_identifier,
    check_text,
    decode_line,
    is_gzip,
    iter_raw_lines,
    limited_gzip,
    open_binary,
    parse_finite,
    parse_integer,
    split_columns,
)

__all__ = [
    "CastTurn",
    "RunLine",
    "TrecFormatError",
    "iter_lines",
    "iter_passages_jsonl",
    "iter_passages_tsv",
    "iter_qrels",
    "iter_run",
    "iter_topics_tsv",
    "iter_turns_tsv",
    "read_cast_topics",
    "read_qrels",
    "read_qrels_with_lines",
]

# Updating tqdm once per line costs more than parsing a short line; update once per this many bytes instead.
_PROGRESS_STEP_BYTES = 1 << 20
# The CAsT topics JSON is read whole (it has no lines); the 2019 year's file is 60 kB.
MAX_JSON_BYTES = 64 << 20


def iter_lines(path: str | os.PathLike[str], *, progress: bool = False) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every non-blank line, decoded by :func:`trecio.text.decode_line`
    (UTF-8, no line ending, no byte-order mark, no NUL). ``*.gz`` files are decompressed.

    Line numbers are 1-based and count blank lines, so they match what an editor shows."""
    total = os.path.getsize(path)
    bar = tqdm(
        total=total, unit="B", unit_scale=True, desc=Path(path).name, disable=not progress, leave=False
    )
    pending = done = 0
    try:
        with open(path, "rb") as raw:
            handle = limited_gzip(raw, path=path) if is_gzip(path) else raw
            for line_number, data in iter_raw_lines(handle, path=path):
                pending += len(data)
                if pending >= _PROGRESS_STEP_BYTES:
                    # Compressed files advance by the compressed bytes consumed, so the bar ends at 100%.
                    position = raw.tell() if handle is not raw else done + pending
                    bar.update(position - done)
                    done, pending = position, 0
                line = decode_line(data, path=path, line_number=line_number)
                if line.strip(" \t"):
                    yield line_number, line
        bar.update(total - done)
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise TrecFormatError(path, None, f"not a readable gzip file ({error})") from None
    finally:
        bar.close()


def iter_qrels(
    path: str | os.PathLike[str], *, progress: bool = False
) -> Iterator[tuple[int, str, str, float]]:
    """Yield ``(line_number, topic_id, docid, value)`` for each line ``topic iteration docid value`` of a TREC
    qrels file. The value may be a float (preference qrels code levels as arbitrary numbers); the iteration
    column (usually ``Q0`` or ``0``) is ignored, as trec_eval ignores it. Duplicates are not checked here
    (see :func:`read_qrels`)."""
    for line_number, line in iter_lines(path, progress=progress):
        columns = split_columns(line, path=path, line_number=line_number)
        if len(columns) != 4:
            raise TrecFormatError(
                path, line_number, f"expected 4 columns 'topic Q0 docid grade', found {len(columns)}"
            )
        topic_id, _, docid, value_text = columns
        if len(topic_id) > MAX_TOPIC_ID_LENGTH or len(docid) > MAX_DOCID_LENGTH:
            _topic_id(topic_id, path=path, line_number=line_number)
            _docid(docid, path=path, line_number=line_number)
        yield (
            line_number,
            topic_id,
            docid,
            parse_finite(value_text, what="grade", path=path, line_number=line_number),
        )


def read_qrels(path: str | os.PathLike[str], *, progress: bool = False) -> dict[str, dict[str, float]]:
    """Read a whole qrels file into ``{topic_id: {docid: value}}``, topics and docids in file order.

    A line repeating an earlier (topic, docid) with the same value is accepted and ignored; with a different
    value it is an error that names both lines."""
    return read_qrels_with_lines(path, progress=progress)[0]


def read_qrels_with_lines(
    path: str | os.PathLike[str], *, progress: bool = False
) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], int]]:
    """As :func:`read_qrels`, plus ``{(topic_id, docid): line_number}`` of the first line of each pair, so a
    later check (an unknown topic, a grade conflicting with the database) can name the line it comes from."""
    qrels: dict[str, dict[str, float]] = {}
    first_lines: dict[tuple[str, str], int] = {}
    for line_number, topic_id, docid, value in iter_qrels(path, progress=progress):
        grades = qrels.setdefault(topic_id, {})
        previous = grades.get(docid)
        if previous is None:
            grades[docid] = value
            first_lines[topic_id, docid] = line_number
        elif previous != value:
            raise TrecFormatError(
                path,
                line_number,
                f"grade {format_value(value)} for topic {topic_id} docid {docid} conflicts with grade "
                f"{format_value(previous)} on line {first_lines[topic_id, docid]}",
            )
    return qrels, first_lines


class RunLine(NamedTuple):
    """One line ``topic Q0 docid rank score tag`` of a TREC run (a named tuple: a run has millions)."""

    line_number: int
    topic_id: str
    docid: str
    rank: int
    score: float
    tag: str


def iter_run(path: str | os.PathLike[str], *, progress: bool = False) -> Iterator[RunLine]:
    """Yield each line of a TREC run (6 columns ``topic Q0 docid rank score tag``).

    The rank must be an integer (0- and 1-based runs both occur; trec_eval ranks by score anyway) and the
    score a finite number. Duplicate docids within a topic are not detected: that needs memory proportional
    to the run, and a run file is streamed in constant memory."""
    for line_number, line in iter_lines(path, progress=progress):
        columns = split_columns(line, path=path, line_number=line_number)
        if len(columns) != 6:
            raise TrecFormatError(
                path, line_number, f"expected 6 columns 'topic Q0 docid rank score tag', found {len(columns)}"
            )
        topic_id, _, docid, rank_text, score_text, tag = columns
        if len(topic_id) > MAX_TOPIC_ID_LENGTH or len(docid) > MAX_DOCID_LENGTH:
            _topic_id(topic_id, path=path, line_number=line_number)
            _docid(docid, path=path, line_number=line_number)
        yield RunLine(
            line_number,
            topic_id,
            docid,
            parse_integer(rank_text, what="rank", path=path, line_number=line_number),
            parse_finite(score_text, what="score", path=path, line_number=line_number),
            tag,
        )


def iter_topics_tsv(
    path: str | os.PathLike[str], *, progress: bool = False
) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line_number, topic_id, question)`` from a ``topic_id<TAB>question`` file. The question is
    everything after the first tab (stripped); an empty topic id or question is an error."""
    for line_number, line in iter_lines(path, progress=progress):
        topic_id, tab, question = line.partition("\t")
        topic_id, question = topic_id.strip(), question.strip()
        if not tab:
            raise TrecFormatError(path, line_number, "expected 'topic_id<TAB>question', found no tab")
        _topic_id(topic_id, path=path, line_number=line_number)
        if not question:
            raise TrecFormatError(path, line_number, f"empty question for topic {topic_id}")
        yield line_number, topic_id, question


def iter_turns_tsv(path: str | os.PathLike[str], *, progress: bool = False) -> Iterator[CastTurn]:
    """Yield the conversation turns of a ``topic_id<TAB>conversation_id<TAB>turn<TAB>raw utterance`` file
    (the layout of the demo's ``conversations.tsv``; the raw utterance is what the user typed)."""
    for line_number, line in iter_lines(path, progress=progress):
        columns = line.split("\t", 3)
        if len(columns) != 4:
            raise TrecFormatError(
                path,
                line_number,
                f"expected 4 tab-separated columns 'topic_id conversation_id turn utterance', found {len(columns)}",
            )
        topic_id, conversation_id, turn_text, utterance = (column.strip() for column in columns)
        _topic_id(topic_id, path=path, line_number=line_number)
        _conversation_id(conversation_id, path=path, line_number=line_number)
        turn = parse_integer(turn_text, what="turn", path=path, line_number=line_number, minimum=0)
        if not utterance:
            raise TrecFormatError(path, line_number, f"empty utterance for topic {topic_id}")
        yield CastTurn(line_number, topic_id, conversation_id, turn, utterance)


def iter_passages_tsv(
    path: str | os.PathLike[str], *, progress: bool = False
) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line_number, docid, text)`` from a ``docid<TAB>text`` file (MS MARCO's collection.tsv layout).
    The text is everything after the first tab, so it may itself contain tabs."""
    for line_number, line in iter_lines(path, progress=progress):
        docid, tab, text = line.partition("\t")
        docid = docid.strip()
        if not tab:
            raise TrecFormatError(path, line_number, "expected 'docid<TAB>text', found no tab")
        yield line_number, *_checked_passage(docid, text, path=path, line_number=line_number)


def iter_passages_jsonl(
    path: str | os.PathLike[str], *, progress: bool = False
) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line_number, docid, text)`` from a JSON-lines file of objects ``{"id": ..., "text": ...}``.

    ``"contents"`` is accepted in place of ``"text"`` (the Pyserini/Anserini layout); an integer id is read as
    its decimal string. Other keys are ignored."""
    for line_number, line in iter_lines(path, progress=progress):
        record = _json_loads(line, path=path, line_number=line_number)
        if not isinstance(record, dict):
            raise TrecFormatError(path, line_number, 'expected a JSON object {"id": ..., "text": ...}')
        docid = record.get("id")
        if isinstance(docid, int) and not isinstance(docid, bool):
            docid = str(docid)
        if not isinstance(docid, str):
            raise TrecFormatError(path, line_number, 'missing "id" (a string)')
        text = record.get("text", record.get("contents"))
        if not isinstance(text, str):
            raise TrecFormatError(path, line_number, f'missing "text" (a string) for docid {docid!r}')
        yield line_number, *_checked_passage(docid.strip(), text, path=path, line_number=line_number)


def _json_loads(text: str, *, path, line_number: int):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TrecFormatError(path, line_number, f"bad JSON: {error.msg} at column {error.colno}") from None
    except ValueError:  # an integer of more than 4300 digits (Python's limit on int() of a string)
        raise TrecFormatError(path, line_number, "bad JSON: a number too long to read") from None
    except RecursionError:
        raise TrecFormatError(path, line_number, "bad JSON: nested too deeply") from None


def _topic_id(value: str, *, path, line_number: int | None) -> str:
    # An id with a space could never be named in a qrels or run line; the length is the database's.
    return check_identifier(
        value, what="topic id", max_length=MAX_TOPIC_ID_LENGTH, path=path, line_number=line_number
    )


def _conversation_id(value: str, *, path, line_number: int | None) -> str:
    return check_identifier(
        value, what="conversation id", max_length=MAX_TOPIC_ID_LENGTH, path=path, line_number=line_number
    )


def _docid(value: str, *, path, line_number: int | None) -> str:
    return check_identifier(
        value, what="docid", max_length=MAX_DOCID_LENGTH, path=path, line_number=line_number
    )


def _checked_passage(docid: str, text: str, *, path, line_number: int) -> tuple[str, str]:
    _docid(docid, path=path, line_number=line_number)
    check_text(text, what=f"text of docid {docid}", path=path, line_number=line_number)
    if not text.strip():
        raise TrecFormatError(path, line_number, f"empty text for docid {docid}")
    return docid, text.strip()


@dataclass(frozen=True, slots=True)
class CastTurn:
    """One turn of a TREC CAsT conversation: topic id ``{conversation}_{turn}`` and the raw utterance."""

    line_number: int
    topic_id: str
    conversation_id: str
    turn: int
    utterance: str


def read_cast_topics(path: str | os.PathLike[str]) -> list[CastTurn]:
    """Read the TREC CAsT topics JSON: a list of conversations ``{"number", "title", "description", "turn":
    [{"number", "raw_utterance"}, ...]}``, returning one :class:`CastTurn` per turn in file order.

    JSON has no lines of its own, so a structural error names the line where the offending conversation
    starts; a syntax error names the line the parser stopped on. A repeated topic id is an error."""
    data = _read_bytes(path)
    if data.startswith(UTF8_BYTE_ORDER_MARK):
        data = data[len(UTF8_BYTE_ORDER_MARK) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        raise TrecFormatError(
            path,
            data.count(b"\n", 0, line_start) + 1,
            f"not UTF-8 text ({error.reason} at byte {error.start - line_start})",
        ) from None
    if "\x00" in text:
        raise TrecFormatError(path, _line_at(text, text.index("\x00")), "NUL character")
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        raise TrecFormatError(path, _line_at(text, position), "expected a JSON list of conversations")
    position = _skip_space(text, position + 1)
    turns: list[CastTurn] = []
    first_lines: dict[str, int] = {}
    while not text.startswith("]", position):
        line_number = _line_at(text, position)
        try:
            conversation, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise TrecFormatError(path, error.lineno, f"bad JSON: {error.msg}") from None
        except ValueError:  # an integer of more than 4300 digits (Python's limit on int() of a string)
            raise TrecFormatError(path, line_number, "bad JSON: a number too long to read") from None
        except RecursionError:
            raise TrecFormatError(path, line_number, "bad JSON: nested too deeply") from None
        for turn in _cast_conversation_turns(conversation, path=path, line_number=line_number):
            if turn.topic_id in first_lines:
                raise TrecFormatError(
                    path,
                    line_number,
                    f"topic {turn.topic_id} repeats the one on line {first_lines[turn.topic_id]}",
                )
            first_lines[turn.topic_id] = line_number
            turns.append(turn)
        position = _skip_space(text, position)
        if text.startswith(",", position):
            position = _skip_space(text, position + 1)
        elif not text.startswith("]", position):
            raise TrecFormatError(
                path, _line_at(text, position), "bad JSON: expected ',' or ']' between conversations"
            )
    if text[position + 1 :].strip():
        raise TrecFormatError(path, _line_at(text, position + 1), "bad JSON: extra data after the list")
    return turns


def _cast_conversation_turns(conversation, *, path, line_number: int) -> Iterator[CastTurn]:
    if not isinstance(conversation, dict) or not isinstance(conversation.get("turn"), list):
        raise TrecFormatError(path, line_number, 'expected a conversation {"number": ..., "turn": [...]}')
    number = conversation.get("number")
    if isinstance(number, bool) or not isinstance(number, int | str) or str(number).strip() == "":
        raise TrecFormatError(path, line_number, 'conversation without a "number"')
    conversation_id = _conversation_id(str(number).strip(), path=path, line_number=line_number)
    for index, turn in enumerate(conversation["turn"], start=1):
        turn_number = turn.get("number") if isinstance(turn, dict) else None
        utterance = turn.get("raw_utterance") if isinstance(turn, dict) else None
        if isinstance(turn_number, bool) or not isinstance(turn_number, int):
            raise TrecFormatError(
                path,
                line_number,
                f'conversation {conversation_id}, turn #{index}: "number" is not an integer',
            )
        if not 0 <= turn_number <= MAX_INTEGER:
            raise TrecFormatError(
                path,
                line_number,
                f'conversation {conversation_id}, turn #{index}: "number" is out of range (0 to {MAX_INTEGER})',
            )
        if not isinstance(utterance, str) or not utterance.strip():
            raise TrecFormatError(
                path,
                line_number,
                f'conversation {conversation_id}, turn {turn_number}: empty "raw_utterance"',
            )
        check_text(
            utterance,
            what=f'"raw_utterance" of conversation {conversation_id}, turn {turn_number}',
            path=path,
            line_number=line_number,
        )
        topic_id = _topic_id(f"{conversation_id}_{turn_number}", path=path, line_number=line_number)
        yield CastTurn(line_number, topic_id, conversation_id, turn_number, utterance.strip())


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        with open_binary(path) as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise TrecFormatError(path, None, f"not a readable gzip file ({error})") from None
    if len(data) > MAX_JSON_BYTES:
        raise TrecFormatError(path, None, f"larger than {MAX_JSON_BYTES:,} bytes (a topics JSON file)")
    return data


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _line_at(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1
