"""Writes of the pools app: creating collections and importing topics, passages, qrels and runs.

Every import is all or nothing: the file is validated line by line inside one transaction, and the first bad
line raises :class:`trecio.TrecFormatError` (``file:line: problem``) and rolls everything back. Rows are
written in batches (``bulk_create``/``bulk_update``, COPY on PostgreSQL), never one query per line. A run is
validated by streaming and stored as a file under MEDIA_ROOT (see :func:`run_import`).
"""

from pools.services.collection import (
    CollectionOwnerError,
    collection_copy,
    collection_create,
    collection_delete,
    collection_get_or_create,
    collection_owner_get,
    collection_validation_message,
    collection_version_release,
)
from pools.services.demo import DEMO_COLLECTION_NAME, DemoLoadResult, demo_load
from pools.services.importing import (
    BATCH_SIZE,
    CollectionForbiddenError,
    ImportRejectedError,
    ImportResult,
    collection_change_check,
)
from pools.services.passages import passage_format_for, passages_import
from pools.services.qrels import qrels_import
from pools.services.runs import run_delete, run_files_clean, run_import
from pools.services.topics import (
    topics_import,
    topics_import_cast,
    topics_import_tsv,
    topics_import_turns,
)
from pools.services.versions import collection_current, collection_lock_current

__all__ = [
    "BATCH_SIZE",
    "CollectionForbiddenError",
    "CollectionOwnerError",
    "collection_change_check",
    "collection_copy",
    "collection_current",
    "collection_lock_current",
    "collection_owner_get",
    "collection_validation_message",
    "collection_version_release",
    "DEMO_COLLECTION_NAME",
    "DemoLoadResult",
    "ImportRejectedError",
    "ImportResult",
    "collection_create",
    "collection_delete",
    "collection_get_or_create",
    "demo_load",
    "passage_format_for",
    "passages_import",
    "qrels_import",
    "run_delete",
    "run_files_clean",
    "run_import",
    "topics_import",
    "topics_import_cast",
    "topics_import_tsv",
    "topics_import_turns",
]
