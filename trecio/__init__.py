"""Reading and writing the TREC files toppref starts from and produces: one error type, one set of line
rules, one writer. Pure standard library, so both the lowest Django app (``pools``) and the pure measures
(``metrics.core``) may import it.

Two readers, for two jobs, with the same rules (:mod:`trecio.text`):

- ``pools.trec`` **streams**, line by line in constant memory, for importing into the database and for the
  file-only commands that build judgments (``thin``, ``simulate``, ``plan``). A qrels line repeating a
  (topic, docid) with a different value is an error naming both lines, since an import must not guess which
  grade is meant. It also checks what the database would refuse (lengths, NUL, integer ranges), so SQLite and
  PostgreSQL accept and refuse the same files.
- ``metrics.core.readers`` reads **columns** (numpy and Arrow arrays, no Python object per line), for scoring
  runs. A repeated (topic, docid) keeps the maximum value, the rule of the reference ``compatibility.py`` of
  Clarke, Vtyurina and Smucker, "Assessing top-k preferences", so scores match the reference's.

Shared by both: UTF-8 with an optional byte-order mark; ``\\n`` or ``\\r\\n`` line ends; blank lines skipped;
columns split at runs of ASCII spaces and tabs only; ``*.gz`` decompressed; every problem raised as
:class:`TrecFormatError` (``file:line: problem``).

Writing: :func:`write_qrels` and :func:`write_run` print a value as an integer when it is one and otherwise as
the shortest exact float (:func:`format_value`), so a written file reads back to the same numbers.
"""

from trecio.errors import TrecFormatError
from trecio.order import topic_order_key
from trecio.spreadsheet import spreadsheet_safe, spreadsheet_text
from trecio.text import MAX_DOCID_LENGTH, MAX_INTEGER, MAX_TOPIC_ID_LENGTH, is_gzip, open_binary
from trecio.writer import format_value, qrels_line, run_line, write_qrels, write_run

__all__ = [
    "MAX_DOCID_LENGTH",
    "MAX_INTEGER",
    "MAX_TOPIC_ID_LENGTH",
    "TrecFormatError",
    "format_value",
    "is_gzip",
    "open_binary",
    "qrels_line",
    "run_line",
    "spreadsheet_safe",
    "spreadsheet_text",
    "topic_order_key",
    "write_qrels",
    "write_run",
]
