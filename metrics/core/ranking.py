"""Ordering a run per topic and lining it up with the qrels: the columnar input of every measure.

Two conventions exist and both are needed:

- ``DOCID_ASCENDING`` with ``duplicates="keep"``: the reference ``compatibility.py``. Score descending, equal
  scores by docid ascending, the rank column ignored. A docid repeated inside a topic keeps both lines (both
  consume a rank) but both carry the score of its *last* line (the script's score dict), so they sort together.
- ``DOCID_DESCENDING`` with ``duplicates="collapse"``: trec_eval as seen through pytrec_eval. Score descending,
  equal scores by docid descending; a repeated docid is one entry with the score of its last line (pytrec_eval's
  run dict; trec_eval itself rejects such runs).

:func:`align` turns a ranked run into :class:`Alignment`: for every judged (topic, docid) its 0-based position in
the run, plus each topic's run length. Every measure of the papers is a function of these arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import pyarrow as pa

from metrics.core.arrays import RankOptions, SetLookupOptions, SortOptions, arrow_call, from_numpy, to_numpy
from metrics.core.readers import Qrels, Run

DOCID_ASCENDING: Final = "docid_ascending"
DOCID_DESCENDING: Final = "docid_descending"
TieRule = Literal["docid_ascending", "docid_descending"]
DuplicateRule = Literal["keep", "collapse"]

NOT_RETRIEVED = -1


@dataclass(frozen=True)
class RankedRun:
    """A run ordered per topic. Topic ``i`` (``topics[i]``) holds ``docid[offsets[i]:offsets[i + 1]]`` in rank
    order; topics are in order of first appearance in the run file. ``docid`` is an Arrow string array."""

    runid: str
    topics: np.ndarray
    offsets: np.ndarray
    docid: pa.Array

    def ranking(self, topic: str) -> list[str]:
        """The ranked docids of one topic ([] when the run lacks it); for tests and small tools."""
        where = np.flatnonzero(self.topics == topic)
        if len(where) == 0:
            return []
        i = int(where[0])
        docids: list[str] = self.docid.slice(
            self.offsets[i], self.offsets[i + 1] - self.offsets[i]
        ).to_pylist()
        return docids


@dataclass(frozen=True)
class Alignment:
    """One run seen from the qrels, topic by topic.

    ``topics`` (length T): evaluated topics; first those present in the run (run order), then those missing from
    it (qrels order). ``run_length[t]`` is the number of ranked entries (0 for a missing topic); ``is_in_run[t]``
    says whether the run has the topic. The judged arrays (length J) hold every qrels row of those topics grouped
    by topic (qrels order within a topic): ``judged_topic`` (index into ``topics``), ``value`` (qrels value) and
    ``position`` (0-based rank of the docid's first occurrence in the run, ``NOT_RETRIEVED`` = -1 if absent).
    """

    runid: str
    topics: list[str]
    run_length: np.ndarray
    is_in_run: np.ndarray
    judged_topic: np.ndarray
    value: np.ndarray
    position: np.ndarray

    @property
    def topic_count(self) -> int:
        return len(self.topics)


def rank_run(run: Run, *, ties: TieRule, duplicates: DuplicateRule) -> RankedRun:
    """Order each topic of ``run`` by score descending, equal scores by docid (``ties``), see the module doc.

    Docids compare as UTF-8 bytes, which is code-point order, the order of the reference script's ``sorted``.
    Cost: docid strings are compared only where needed (repeated docids, equal scores); a file already in rank
    order (the usual case) is not sorted at all; no Python object per line.
    """
    if ties not in (DOCID_ASCENDING, DOCID_DESCENDING):
        raise ValueError(f"unknown tie rule {ties!r}")
    if duplicates not in ("keep", "collapse"):
        raise ValueError(f"unknown duplicate rule {duplicates!r}")
    topics, topic_code = _topic_codes(run.topic)
    last_copy = _last_copy_rows(topic_code, run.docid)
    score = run.score
    rows = np.arange(len(score))
    if last_copy is None:  # no line to drop or rescore: the columns as read, no copy
        columns = {"topic": topic_code, "score": score}
    else:
        is_earlier_copy = last_copy != rows
        if duplicates == "collapse":
            rows = rows[~is_earlier_copy]
        else:
            score = score[last_copy]
        columns = {"topic": topic_code[rows], "score": score[rows]}
    # Arrow's multi-key sort is several times faster than np.lexsort here.
    sort_keys = [("topic", "ascending"), ("score", "descending")]
    is_sorted = _is_in_rank_order(columns["topic"], columns["score"])
    if is_sorted:
        order = rows if last_copy is None else np.arange(len(rows))
        sorted_topic, sorted_score = columns["topic"], columns["score"]
    else:
        order = to_numpy(
            arrow_call(
                "sort_indices",
                pa.table({name: from_numpy(values) for name, values in columns.items()}),
                options=SortOptions(sort_keys=sort_keys),
            )
        )
        sorted_topic, sorted_score = columns["topic"][order], columns["score"][order]
    is_tied = np.zeros(len(order), dtype=bool)
    is_tied[1:] = (sorted_topic[1:] == sorted_topic[:-1]) & (sorted_score[1:] == sorted_score[:-1])
    if is_tied.any():
        is_tied[:-1] |= is_tied[1:]
        tied = order[is_tied]
        docid_rank = np.zeros(len(rows), dtype=np.int64)
        docid_rank[tied] = to_numpy(
            arrow_call(
                "rank",
                arrow_call("take", run.docid, from_numpy(rows[tied])),
                options=RankOptions(tiebreaker="dense"),
            )
        )
        columns["docid"] = docid_rank
        is_sorted = False
        sort_keys.append(("docid", "ascending" if ties == DOCID_ASCENDING else "descending"))
        order = to_numpy(
            arrow_call(
                "sort_indices",
                pa.table({name: from_numpy(values) for name, values in columns.items()}),
                options=SortOptions(sort_keys=sort_keys),
            )
        )
    counts = np.bincount(columns["topic"], minlength=len(topics))
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if is_sorted and len(rows) == len(score):
        docid = run.docid  # every line kept, in file order
    else:
        ranked_rows = rows[order]
        is_file_order = len(ranked_rows) == len(score) and bool(np.all(ranked_rows == np.arange(len(score))))
        docid = run.docid if is_file_order else arrow_call("take", run.docid, from_numpy(ranked_rows))
    return RankedRun(runid=run.runid, topics=topics, offsets=offsets, docid=docid)


def _topic_codes(topic: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(distinct topics in order of first appearance, each line's index in them). A run file lists each topic
    in one block (the usual case): then only the first line of each block is hashed, else every line is."""
    n = len(topic)
    if n > 1:
        is_new_block = arrow_call("not_equal", topic.slice(1), topic.slice(0, n - 1))
        block_starts = np.concatenate(
            ([0], to_numpy(arrow_call("indices_nonzero", is_new_block)).astype(np.int64) + 1)
        )
        heads = arrow_call("dictionary_encode", arrow_call("take", topic, from_numpy(block_starts)))
        if len(heads.dictionary) == len(block_starts):  # no topic in two blocks
            codes = np.repeat(np.arange(len(block_starts)), np.diff(np.append(block_starts, n)))
            return np.asarray(heads.dictionary.to_pylist(), dtype=object), codes
    encoded = arrow_call("dictionary_encode", topic)
    return np.asarray(encoded.dictionary.to_pylist(), dtype=object), to_numpy(encoded.indices).astype(
        np.int64
    )


def _is_in_rank_order(topic_code: np.ndarray, score: np.ndarray) -> bool:
    """Topics contiguous (codes follow first appearance, so non-decreasing) and scores non-increasing in each."""
    same_topic = topic_code[1:] == topic_code[:-1]
    return bool(np.all(topic_code[1:] >= topic_code[:-1]) and np.all(~same_topic | (score[1:] <= score[:-1])))


FINGERPRINT_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so multiplying mixes without losing bits
BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
# The top k bytes of a little-endian word: the last k bytes of the 8 that end where a string ends.
HIGH_BYTE_MASKS = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - k))) - 1) for k in range(9)], dtype=np.uint64)
FINGERPRINT_MAX_BYTES = 64


@dataclass(frozen=True)
class _StringBytes:
    """A string array's bytes as Arrow holds them: each string's start, end and length in ``words``, a view of
    the bytes in which every position starts a little-endian 8-byte word (padded with 8 zero bytes before the
    first string and past the last, so a word may start 8 bytes before any end; no copy per word)."""

    starts: np.ndarray
    ends: np.ndarray
    lengths: np.ndarray
    longest: int
    words: np.ndarray

    @classmethod
    def of(cls, strings: pa.Array) -> _StringBytes:
        _, offsets_buffer, data = strings.buffers()
        offset_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
        offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=strings.offset + len(strings) + 1)
        offsets = offsets[strings.offset :]
        lengths = np.diff(offsets)
        longest = int(lengths.max()) if len(lengths) else 0
        first, last = int(offsets[0]), int(offsets[-1])
        size = last - first
        # Padded so that a word read 8 bytes before any end, or at any start plus any chunk, stays inside.
        padded = np.empty(8 + size + longest + 8, dtype=np.uint8)
        padded[:8] = 0
        padded[8 + size :] = 0
        if data is not None:
            padded[8 : 8 + size] = np.frombuffer(data, dtype=np.uint8, count=last)[first:]
        words = np.ndarray(shape=(size + longest + 9,), dtype="<u8", buffer=padded, strides=(1,))
        shift = 8 - first
        return cls(
            starts=offsets[:-1] + shift,
            ends=offsets[1:] - first,
            lengths=lengths,
            longest=longest,
            words=words,
        )


def _string_tail_keys(strings: _StringBytes) -> np.ndarray:
    """A cheap 64-bit key of each string: its length and its last 8 bytes (all of it when shorter), one word
    read per string (equal strings, equal keys). Identifiers differ most at their end, so the docids of a run
    rarely share a key; when two do, the full fingerprints decide."""
    lengths = strings.lengths
    # The word of the 8 bytes that end where the string ends (``ends`` index the padded view, 8 bytes ahead).
    word = strings.words[strings.ends]
    if int(lengths.min()) < 8:  # a short string's word starts in the bytes before it: masked off
        word &= HIGH_BYTE_MASKS[np.minimum(lengths, 8)]
    key = lengths.astype(np.uint64)
    key *= FINGERPRINT_MULTIPLIER
    key += word
    return key


def _string_fingerprints(strings: _StringBytes) -> np.ndarray | None:
    """A 64-bit polynomial fingerprint of each string, read 8 bytes at a time from Arrow's buffers (equal
    strings, equal fingerprints); None when a string is longer than ``FINGERPRINT_MAX_BYTES``."""
    longest, lengths, words, starts = strings.longest, strings.lengths, strings.words, strings.starts
    if longest > FINGERPRINT_MAX_BYTES:
        return None
    fingerprint = lengths.astype(np.uint64)
    for chunk in range(0, longest, 8):
        word = words[starts + chunk]
        remaining = lengths - chunk
        if int(remaining.min()) < 8:  # bytes past a string's end are masked off
            word &= BYTE_MASKS[np.minimum(np.maximum(remaining, 0), 8)]
        fingerprint *= FINGERPRINT_MULTIPLIER
        fingerprint += word
    return fingerprint


def _are_distinct(fingerprints: np.ndarray | None, topic_code: np.ndarray) -> bool:
    """True only when no two lines share topic and fingerprint (so no (topic, docid) repeats); False may
    also mean a fingerprint collision, which the exact check then settles."""
    if fingerprints is None:
        return False
    key = fingerprints * FINGERPRINT_MULTIPLIER
    key += topic_code.astype(np.uint64, copy=False)
    key.sort()
    return not bool((key[1:] == key[:-1]).any())


def _last_copy_rows(topic_code: np.ndarray, docid: pa.Array) -> np.ndarray | None:
    """For each line, the last line (file order) with the same (topic, docid); None when no pair repeats."""
    n = len(topic_code)
    if n < 2:
        return None
    # The common case, no (topic, docid) repeated: distinct keys prove it without hashing strings, the tail
    # keys (one word per docid) mostly, else the full fingerprints.
    docid_bytes = _StringBytes.of(docid)
    if _are_distinct(_string_tail_keys(docid_bytes), topic_code):
        return None
    if _are_distinct(_string_fingerprints(docid_bytes), topic_code):
        return None
    docid_rank = to_numpy(
        arrow_call("rank", docid, options=RankOptions(sort_keys="ascending", tiebreaker="dense"))
    ).astype(np.int64)
    pair = topic_code * (int(docid_rank.max()) + 1) + docid_rank
    sorted_pair = np.sort(pair)
    if not (sorted_pair[1:] == sorted_pair[:-1]).any():
        return None
    last_row = np.arange(n)
    # A stable sort puts the copies of a pair together, in file order: a group's last entry is its last line.
    by_pair = np.argsort(pair, kind="stable")
    sorted_pair = pair[by_pair]
    is_group_end = np.ones(n, dtype=bool)
    is_group_end[:-1] = sorted_pair[1:] != sorted_pair[:-1]
    group = np.cumsum(np.concatenate(([True], is_group_end[:-1]))) - 1
    last_row[by_pair] = by_pair[is_group_end][group]
    return last_row


def align(qrels: Qrels, ranked: RankedRun) -> Alignment:
    """Line up a ranked run with the qrels; see :class:`Alignment`. All qrels topics are included."""
    qrels_topics, qrels_topic_code = qrels.topic_codes
    run_topics = list(ranked.topics)
    qrels_topic_set = set(qrels_topics)
    run_topic_set = set(run_topics)
    topics = [t for t in run_topics if t in qrels_topic_set]
    topics += [t for t in qrels_topics if t not in run_topic_set]
    topic_index = {t: i for i, t in enumerate(topics)}
    # Judged rows grouped by evaluated topic, stable so that qrels order survives inside a topic.
    judged_topic = np.array([topic_index[t] for t in qrels_topics], dtype=np.int64)[qrels_topic_code]
    grouping = np.argsort(judged_topic, kind="stable")
    judged_topic = judged_topic[grouping]

    run_length = np.zeros(len(topics), dtype=np.int64)
    is_in_run = np.zeros(len(topics), dtype=bool)
    run_topic_index = np.array([topic_index.get(t, -1) for t in run_topics], dtype=np.int64)
    lengths = np.diff(ranked.offsets)
    present = run_topic_index >= 0
    run_length[run_topic_index[present]] = lengths[present]
    is_in_run[run_topic_index[present]] = True

    vocabulary, docid_code = qrels.docid_codes
    position = _judged_positions(vocabulary, docid_code[grouping], judged_topic, ranked, run_topic_index)
    return Alignment(
        runid=ranked.runid,
        topics=topics,
        run_length=run_length,
        is_in_run=is_in_run,
        judged_topic=judged_topic,
        value=qrels.value[grouping],
        position=position,
    )


def _judged_positions(
    vocabulary: pa.Array,
    judged_code: np.ndarray,
    judged_topic: np.ndarray,
    ranked: RankedRun,
    run_topic_index: np.ndarray,
) -> np.ndarray:
    """Position of each judged docid in its topic's ranking (first occurrence), or NOT_RETRIEVED.

    ``vocabulary`` holds the distinct judged docids and ``judged_code`` each judged row's index in it. Only run
    lines whose docid is judged somewhere leave Arrow (one hash lookup), so the cost follows the qrels.
    """
    result = np.full(len(judged_code), NOT_RETRIEVED, dtype=np.int64)
    if len(judged_code) == 0 or len(ranked.docid) == 0:
        return result
    run_code = to_numpy(
        arrow_call("index_in", ranked.docid, options=SetLookupOptions(value_set=vocabulary)), fill=-1
    )
    hit = np.flatnonzero(run_code >= 0)
    hit_topic = np.searchsorted(ranked.offsets, hit, side="right") - 1
    hit_position = hit - ranked.offsets[hit_topic]
    hit_topic = run_topic_index[hit_topic]
    is_evaluated = hit_topic >= 0
    stride = len(vocabulary)
    run_pair = hit_topic[is_evaluated] * stride + run_code[hit][is_evaluated]
    hit_position = hit_position[is_evaluated]
    # Rows of a topic are in rank order, so the first copy of a pair is its best position.
    # np.unique's first index of each pair is its first copy; the pairs are then sorted, ready for searchsorted.
    pairs, first = np.unique(run_pair, return_index=True)
    wanted = judged_topic * stride + judged_code
    slot = np.minimum(np.searchsorted(pairs, wanted), max(len(pairs) - 1, 0))
    if len(pairs):
        found = pairs[slot] == wanted
        result[found] = hit_position[first[slot[found]]]
    return result
