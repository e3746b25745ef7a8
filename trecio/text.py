"""The rules every reader applies to the text of a line: decompression, the byte-order mark, how columns are
split, and what an identifier or a number may be. Pure standard library.

Why these rules are the same in both readers: docs/decisions.md, "One TREC input/output layer".
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterator
from typing import BinaryIO

from trecio.errors import TrecFormatError

BYTE_ORDER_MARK = "\ufeff"
UTF8_BYTE_ORDER_MARK = BYTE_ORDER_MARK.encode("utf-8")

# The database's limits (pools.models: Topic.topic_id and conversation_id are CharField(100), Item.docid is
# CharField(200), Topic.turn a PositiveIntegerField). PostgreSQL enforces them and SQLite does not, so the
# readers check them first: both databases then accept and refuse the same files.
MAX_TOPIC_ID_LENGTH = 100
MAX_DOCID_LENGTH = 200
MAX_INTEGER = 2**31 - 1

# Bounds on what one file may make a reader hold or do, so a hostile upload cannot exhaust the server's memory
# (docs/decisions.md, "Bounds on input"). No TREC line comes near 1 MiB (a run line is under 300 bytes; the
# longest CAsT passage line is under 20 kB), and a line is read at most this far before it is refused.
MAX_LINE_BYTES = 1 << 20
# A gzip file may inflate to at most this many times its own size (and at least MIN_DECOMPRESSED_LIMIT): TREC
# runs and qrels compress 4 to 20 times; a "zip bomb" inflates about 1000 times (1 MB to 1 GiB).
MAX_GZIP_RATIO = 200
MIN_DECOMPRESSED_LIMIT = 64 << 20

# TREC columns are separated by ASCII spaces and tabs (trec_eval's own rule); any other character, including
# Unicode white space such as U+00A0, belongs to the field. Control characters other than the tab have no
# place in a column and would be line breaks to some parsers (a lone CR), so a line holding one is refused.
_SEPARATOR = re.compile(r"[ \t]+")
CONTROL_CHARACTER_CLASS = r"\x00-\x08\x0a-\x1f\x7f"  # the body of a regular expression class [...]
_CONTROL = re.compile(f"[{CONTROL_CHARACTER_CLASS}]")
_NOT_IN_IDENTIFIER = re.compile(r"[\x00-\x20\x7f]")


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """Files whose name ends in ``.gz`` are gzip-compressed (TREC distributes runs as ``input.<runid>.gz``);
    pandas and Arrow decide by the same suffix."""
    return os.fspath(path).endswith(".gz")


def open_binary(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed on the fly when :func:`is_gzip`, never past
    :func:`decompressed_limit` (reading further raises :class:`TrecFormatError`)."""
    if is_gzip(path):
        return limited_gzip(open(path, "rb"), path=path)
    return open(path, "rb")


def decompressed_limit(path: str | os.PathLike[str]) -> int:
    """How many bytes the gzip file ``path`` may inflate to: MAX_GZIP_RATIO times its size, at least
    MIN_DECOMPRESSED_LIMIT."""
    return max(MIN_DECOMPRESSED_LIMIT, os.path.getsize(path) * MAX_GZIP_RATIO)


def limited_gzip(raw: BinaryIO, *, path: str | os.PathLike[str]) -> BinaryIO:
    """A gzip reader over the open file ``raw`` that refuses to inflate past :func:`decompressed_limit`."""
    return _LimitedReader(
        gzip.GzipFile(fileobj=raw, mode="rb"), limit=decompressed_limit(path), path=path, raw=raw
    )  # type: ignore[return-value]


class _LimitedReader(io.BufferedIOBase):
    """Counts the bytes read through it and raises :class:`TrecFormatError` once they pass ``limit``; so the
    caller's memory and time stay bounded whatever the compressed file holds."""

    def __init__(
        self, inner: gzip.GzipFile, *, limit: int, path: str | os.PathLike[str], raw: BinaryIO
    ) -> None:
        super().__init__()
        self._inner, self._limit, self._path, self._raw = inner, limit, path, raw
        self._count = 0

    def _counted(self, data: bytes) -> bytes:
        self._count += len(data)
        if self._count > self._limit:
            raise TrecFormatError(
                self._path,
                None,
                f"decompresses to more than {self._limit:,} bytes ({MAX_GZIP_RATIO} times its size):"
                " refused as a likely gzip bomb",
            )
        return data

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._limit - self._count + 1  # never inflate everything at once: one byte past the limit
        return self._counted(self._inner.read(size))

    def read1(self, size: int = -1) -> bytes:
        return self._counted(self._inner.read1(size if size >= 0 else io.DEFAULT_BUFFER_SIZE))

    def readline(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._limit - self._count + 1
        return self._counted(self._inner.readline(size))

    def tell(self) -> int:
        return self._count

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


def iter_raw_lines(handle: BinaryIO, *, path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, bytes)`` for every line of ``handle``, reading at most MAX_LINE_BYTES per line:
    a longer line is refused after reading that much, so memory stays bounded whatever the file."""
    line_number = 0
    while True:
        data = handle.readline(MAX_LINE_BYTES + 1)
        if not data:
            return
        line_number += 1
        if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
            raise TrecFormatError(path, line_number, f"line longer than {MAX_LINE_BYTES:,} bytes")
        yield line_number, data


def decode_line(raw: bytes, *, path: str | os.PathLike[str], line_number: int) -> str:
    """One line of bytes as text: UTF-8, without its ending (``\\n`` or ``\\r\\n``), without the byte-order
    mark on line 1, and without NUL characters (which PostgreSQL cannot store in text)."""
    if line_number == 1 and raw.startswith(UTF8_BYTE_ORDER_MARK):
        raw = raw[len(UTF8_BYTE_ORDER_MARK) :]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TrecFormatError(
            path, line_number, f"not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    line = line.rstrip("\r\n")
    if "\x00" in line:
        raise TrecFormatError(path, line_number, f"NUL character at column {line.index(chr(0)) + 1}")
    return line


def is_blank(line: str) -> bool:
    """A line of nothing but spaces and tabs (many published files end with one): readers skip it."""
    return not line.strip(" \t")


def split_columns(line: str, *, path: str | os.PathLike[str], line_number: int) -> list[str]:
    """The columns of a qrels or run line, split at runs of ASCII spaces and tabs; a line holding another
    control character (a lone carriage return, a form feed...) is refused."""
    match = _CONTROL.search(line)
    if match is not None:
        raise TrecFormatError(
            path, line_number, f"control character {match.group()!r} at column {match.start() + 1}"
        )
    if line.isascii():
        # str.split() splits at ASCII white space, which is spaces and tabs once controls are refused.
        return line.split()
    stripped = line.strip(" \t")
    return _SEPARATOR.split(stripped) if stripped else []


def check_identifier(
    value: str, *, what: str, max_length: int, path: str | os.PathLike[str], line_number: int | None
) -> str:
    """``value`` if it can name a topic or an item: not empty, no space, tab or control character (it could not
    be written in a qrels or run line), at most ``max_length`` characters."""
    if not value:
        raise TrecFormatError(path, line_number, f"empty {what}")
    check_text(value, what=what, path=path, line_number=line_number)
    match = _NOT_IN_IDENTIFIER.search(value)
    if match is not None:
        raise TrecFormatError(
            path, line_number, f"{what} {_shorten(value)!r} contains white space or a control character"
        )
    if len(value) > max_length:
        raise TrecFormatError(
            path,
            line_number,
            f"{what} {_shorten(value)!r} is {len(value)} characters long (at most {max_length})",
        )
    return value


def check_text(value: str, *, what: str, path: str | os.PathLike[str], line_number: int | None) -> str:
    """``value`` if a database can store it as text: no NUL character and no lone surrogate (both can come
    from a JSON escape, ``"\\u0000"`` or ``"\\ud800"``, even in a file that is valid UTF-8)."""
    if "\x00" in value:
        raise TrecFormatError(path, line_number, f"NUL character in the {what}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise TrecFormatError(path, line_number, f"lone surrogate (not Unicode text) in the {what}") from None
    return value


def parse_finite(text: str, *, what: str, path: str | os.PathLike[str], line_number: int) -> float:
    """``text`` as a finite float; NaN, infinities and numbers beyond the float range are refused."""
    try:
        value = float(text)
    except ValueError:
        raise TrecFormatError(path, line_number, f"{what} {_shorten(text)!r} is not a number") from None
    if value - value != 0:  # NaN or an infinity (including "1e400", which float() rounds to infinity)
        raise TrecFormatError(path, line_number, f"{what} {_shorten(text)!r} is not a finite number")
    return value


def parse_integer(
    text: str,
    *,
    what: str,
    path: str | os.PathLike[str],
    line_number: int,
    minimum: int = -MAX_INTEGER - 1,
    maximum: int = MAX_INTEGER,
) -> int:
    """``text`` as an integer in ``[minimum, maximum]`` (by default a 32-bit signed integer)."""
    if len(text) < 10 and text.isascii() and text.isdigit():  # the usual case, at most 999,999,999
        value = int(text)
        if minimum <= value <= maximum:
            return value
    stripped = text.strip()
    digits = stripped[1:] if stripped[:1] in "+-" else stripped
    if not (digits.isascii() and digits.isdigit()):
        raise TrecFormatError(path, line_number, f"{what} {_shorten(text)!r} is not an integer")
    # A long string of digits is out of range without converting it (int() refuses beyond 4300 digits).
    value = int(stripped) if len(digits) <= 20 else (maximum + 1 if stripped[0] != "-" else minimum - 1)
    if not minimum <= value <= maximum:
        raise TrecFormatError(
            path, line_number, f"{what} {_shorten(text)} is out of range ({minimum} to {maximum})"
        )
    return value


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."
