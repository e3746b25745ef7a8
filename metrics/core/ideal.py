"""Effectiveness levels and the maximum-similarity ideal ranking (Clarke, Vtyurina and Smucker, sections 2-3).

A topic's levels are its distinct positive qrels values: larger is better, equal values share a level, and values
<= 0 (with every unjudged item) form level 0, which never enters an ideal ranking. Only the order of the values
matters, so graded qrels (levels = grades), top-k-only qrels (one level per rank) and combined qrels (top-k coded
above the grades, e.g. 50/40/30/20/10 over 4..1) are all read the same way.

Among all ideal rankings (each level in any order, levels in decreasing order) the one most similar to a run under
RBO orders every level by the run's own ranking, the level's unretrieved items last (pipeline.md 1.2; the order of
those does not change any score; the reference keeps qrels order there, and so do we).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from metrics.core.ranking import NOT_RETRIEVED, Alignment
from metrics.core.readers import Qrels

NOT_IDEAL = -1


def ideal_ranking(values: Mapping[str, float], run: Sequence[str]) -> list[str]:
    """The maximum-similarity ideal ranking of one topic for ``run`` (a list of docids, best first).

    Rule: items with value > 0, by value descending, then by first position in ``run``, items absent from the
    run last in the mapping's order. Example (pipeline.md 1.3): values {d1:3, d2:2, d3:2, d4:1, d5:0} and run
    [d3, d9, d1, d4, d2] give [d1, d3, d2, d4].
    """
    first_position: dict[str, int] = {}
    for position, docid in enumerate(run):
        first_position.setdefault(docid, position)
    unretrieved = len(run)
    judged = [(docid, value) for docid, value in values.items() if value > 0]
    ordered = sorted(
        range(len(judged)),
        key=lambda i: (-judged[i][1], first_position.get(judged[i][0], unretrieved), i),
    )
    return [judged[i][0] for i in ordered]


def ideal_positions(alignment: Alignment) -> np.ndarray:
    """0-based position of every judged row of ``alignment`` in its topic's maximum-similarity ideal ranking.

    Shape (J,), int64; ``NOT_IDEAL`` (-1) for rows with value <= 0. Order inside a topic: value descending, run
    position ascending, unretrieved rows last in qrels order (the alignment keeps qrels order inside a topic).
    """
    is_ideal = alignment.value > 0
    rows = np.flatnonzero(is_ideal)
    run_position = alignment.position[rows]
    unretrieved_last = np.where(run_position == NOT_RETRIEVED, np.iinfo(np.int64).max, run_position)
    order = rows[np.lexsort((rows, unretrieved_last, -alignment.value[rows], alignment.judged_topic[rows]))]
    topic_of_ordered = alignment.judged_topic[order]
    starts = np.searchsorted(topic_of_ordered, np.arange(alignment.topic_count))
    positions = np.full(len(alignment.value), NOT_IDEAL, dtype=np.int64)
    positions[order] = np.arange(len(order), dtype=np.int64) - starts[topic_of_ordered]
    return positions


def ideal_lengths(alignment: Alignment) -> np.ndarray:
    """Number of items in each topic's ideal ranking (judged with value > 0); shape (T,)."""
    return np.bincount(alignment.judged_topic[alignment.value > 0], minlength=alignment.topic_count)


def levels_from_values(qrels: Qrels) -> Qrels:
    """Replace each value by its level index: 1 for the lowest distinct positive value of its topic, up to T for
    the highest; values <= 0 become 0 (measures.md section 9.3).

    This is how preference or weak-order qrels are fed to binary and graded measures: binary relevance is then
    ``level >= threshold`` (9.4; threshold 1 = "in the ideal ranking", T = "top level only") and NDCG gains are
    the level (or any map applied with :func:`map_gains`).
    """
    import pandas as pd  # only for --levels: the scoring path starts faster without pandas

    frame = pd.DataFrame({"topic": qrels.topic, "value": np.where(qrels.value > 0, qrels.value, np.nan)})
    level = frame.groupby("topic", sort=False)["value"].rank(method="dense").fillna(0.0)
    return Qrels(topic=qrels.topic, docid=qrels.docid, value=level.to_numpy(dtype=np.float64))


def map_gains(qrels: Qrels, gains: Mapping[float, float]) -> Qrels:
    """Replace values through ``gains`` (e.g. levels to NDCG gains {1: 1, 2: 3, 3: 7}); a value absent from the
    map keeps its value, so a partial map changes only the levels it names."""
    import pandas as pd

    mapped = pd.Series(qrels.value).map(lambda v: gains.get(v, v)).to_numpy(dtype=np.float64)
    return Qrels(topic=qrels.topic, docid=qrels.docid, value=mapped)


def combined_levels(grades: Mapping[str, float], top_ranks: Mapping[str, int], k: int) -> dict[str, float]:
    """Levels of the combined ideal (section 3 of the paper): the top-k items go above the grades.

    ``top_ranks`` maps each top-k item to its rank 1..k (tied items share a rank, competition style: 1, 1, 3).
    With g the highest positive grade, an item of rank r gets level g + k + 1 - r; every other item keeps its
    grade. Example: CAsT grades 0..4 with k = 5 put ranks 1..5 on levels 9..5 (pipeline.md 1.1).
    """
    highest_grade = max((g for g in grades.values() if g > 0), default=0)
    levels = {docid: float(grade) for docid, grade in grades.items()}
    for docid, rank in top_ranks.items():
        if not 1 <= rank <= k:
            raise ValueError(f"rank {rank} of {docid!r} is outside 1..{k}")
        levels[docid] = float(highest_grade + k + 1 - rank)
    return levels
