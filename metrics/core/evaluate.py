"""Measure names, the measure registry, and per-topic scores of many runs.

A measure name is ``family`` or ``family@parameter``: ``compat`` (= ``compat@0.95``), ``compat@0.8``, ``ndcg``,
``ndcg@10``, ``ap``, ``rr``, ``p@5``, ``rbp@0.8``, ``rbp_residual@0.8``, ``esl`` (= ``esl@1000``). Adding a
measure is one :func:`register_measure` call with a :class:`MeasureFamily`; the CLI and every consumer of
:func:`evaluate_run` pick it up by name.

Topic policy (``missing_topics``):

- ``"drop"`` (default): a run is scored on the topics it retrieved for that the qrels judge, as trec_eval and the
  reference ``compatibility.py`` do. Measures with ``requires_relevant`` (compatibility) also drop topics without
  a positive value, so the mean is the reference's "average".
- ``"zero"``: every judged topic counts; a topic missing from the run is scored as an empty ranking (0 for every
  measure except ESL, which takes its worst case), like ``trec_eval -c``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from metrics.core import trec
from metrics.core.ideal import ideal_lengths
from metrics.core.preference import ppref_per_topic, wpref_per_topic
from metrics.core.ranking import (
    DOCID_ASCENDING,
    DOCID_DESCENDING,
    Alignment,
    DuplicateRule,
    TieRule,
    align,
    rank_run,
)
from metrics.core.rbo import DEFAULT_DEPTH, DEFAULT_P, compatibility
from metrics.core.readers import Qrels, Run

MissingTopics = Literal["drop", "zero"]


@dataclass(frozen=True)
class EvaluationOptions:
    """Settings shared by all measures of one evaluation.

    ``depth``/``normalize``: compatibility's RBO depth (1000) and NRBO switch (on). ``threshold``: binary
    relevance is value >= threshold (trec_eval ``-l``). ``missing_topics``: the topic policy (module doc).
    """

    depth: int = DEFAULT_DEPTH
    normalize: bool = True
    threshold: float = trec.DEFAULT_THRESHOLD
    missing_topics: MissingTopics = "drop"


@dataclass(frozen=True)
class Ordering:
    """How a run is ordered before a measure reads it (see :mod:`metrics.core.ranking`)."""

    ties: TieRule
    duplicates: DuplicateRule


REFERENCE_ORDERING = Ordering(DOCID_ASCENDING, "keep")
TREC_EVAL_ORDERING = Ordering(DOCID_DESCENDING, "collapse")

Compute = Callable[[Alignment, float | int | None, EvaluationOptions], np.ndarray]


@dataclass(frozen=True)
class MeasureFamily:
    """One registry entry.

    ``compute(alignment, parameter, options)`` returns one score per topic of the alignment, shape (T,); NaN
    for a topic where the measure is undefined (the topic is then left out of the run's scores).
    ``parameter`` is ``"int"``, ``"float"`` or ``None`` (no ``@`` allowed); ``default`` is used for the bare
    family name; without a default the parameter is required unless ``is_parameter_optional`` (then ``compute``
    gets ``None``, e.g. ``ndcg`` without cutoff); ``check`` rejects bad parameter values with a message.
    """

    name: str
    compute: Compute
    description: str
    parameter: Literal["int", "float"] | None = None
    default: float | int | None = None
    is_parameter_optional: bool = False
    ordering: Ordering = TREC_EVAL_ORDERING
    requires_relevant: bool = False
    higher_is_better: bool = True
    check: Callable[[float | int], str | None] = field(default=lambda value: None)
    # The public function that computes it: its docstring (formula, paper, ties) is the measure's reference
    # page (docs/generate.py).
    function: Callable[..., object] | None = None


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: its family and parameter; ``name`` is the canonical spelling."""

    family: MeasureFamily
    parameter: float | int | None
    name: str

    def compute(self, alignment: Alignment, options: EvaluationOptions) -> np.ndarray:
        return self.family.compute(alignment, self.parameter, options)


@dataclass(frozen=True)
class TopicScores:
    """Per-topic scores of one run under one measure; ``mean`` is the run's score (0.0 with no topics)."""

    runid: str
    measure: str
    topics: list[str]
    values: np.ndarray

    @property
    def mean(self) -> float:
        return float(self.values.mean()) if len(self.values) else 0.0


MEASURES: dict[str, MeasureFamily] = {}

_NAME = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)(?:@(?P<parameter>[^@\s]+))?$")


def register_measure(family: MeasureFamily) -> MeasureFamily:
    """Add a measure family to the registry (names are unique)."""
    if family.name in MEASURES:
        raise ValueError(f"measure {family.name!r} is already registered")
    MEASURES[family.name] = family
    return family


def parse_measure(name: str) -> Measure:
    """Parse ``family[@parameter]`` (case-insensitive family); raises ValueError naming the problem."""
    match = _NAME.match(name.strip().lower())
    if match is None:
        raise ValueError(f"bad measure name {name!r}: expected family or family@parameter, e.g. ndcg@10")
    family = MEASURES.get(match["family"])
    if family is None:
        raise ValueError(f"unknown measure {match['family']!r}; known: {', '.join(sorted(MEASURES))}")
    text = match["parameter"]
    if text is None:
        if family.parameter is not None and family.default is None and not family.is_parameter_optional:
            raise ValueError(f"measure {family.name!r} needs a parameter, e.g. {family.name}@10")
        parameter = family.default
    elif family.parameter is None:
        raise ValueError(f"measure {family.name!r} takes no parameter (got {name!r})")
    else:
        parameter = _parse_parameter(family, text)
    if parameter is None:
        return Measure(family=family, parameter=None, name=family.name)
    spelled = repr(parameter) if family.parameter == "float" else str(parameter)
    return Measure(family=family, parameter=parameter, name=f"{family.name}@{spelled}")


def _parse_parameter(family: MeasureFamily, text: str) -> float | int:
    try:
        value: float | int = int(text) if family.parameter == "int" else float(text)
    except ValueError:
        kind = "an integer" if family.parameter == "int" else "a number"
        raise ValueError(f"measure {family.name!r}: parameter {text!r} is not {kind}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"measure {family.name!r}: parameter {text!r} is not finite")
    problem = family.check(value)
    if problem:
        raise ValueError(f"measure {family.name!r}: {problem}")
    return value


def evaluate_run(
    qrels: Qrels, run: Run, measures: Sequence[Measure], options: EvaluationOptions = EvaluationOptions()
) -> list[TopicScores]:
    """Score one run under each measure; one :class:`TopicScores` per measure, in the given order.

    The run is ordered once per distinct ordering rule (reference or trec_eval) and aligned with the qrels once.
    """
    alignments: dict[Ordering, Alignment] = {}
    scores = []
    for measure in measures:
        ordering = measure.family.ordering
        if ordering not in alignments:
            ranked = rank_run(run, ties=ordering.ties, duplicates=ordering.duplicates)
            alignments[ordering] = align(qrels, ranked)
        alignment = alignments[ordering]
        values = np.asarray(measure.compute(alignment, options), dtype=np.float64)
        # NaN marks a topic on which the measure is undefined (e.g. ppref with one level): not scored.
        keep = _counted_topics(alignment, measure.family, options) & ~np.isnan(values)
        scores.append(
            TopicScores(
                runid=run.runid,
                measure=measure.name,
                topics=[t for t, kept in zip(alignment.topics, keep, strict=True) if kept],
                values=values[keep],
            )
        )
    return scores


def evaluate_runs(
    qrels: Qrels,
    runs: Iterable[Run],
    measures: Sequence[Measure],
    options: EvaluationOptions = EvaluationOptions(),
) -> list[TopicScores]:
    """Score every run (consumed one at a time, so an iterator of lazily read runs keeps memory flat)."""
    return [scores for run in runs for scores in evaluate_run(qrels, run, measures, options)]


def score_matrix(scores: Iterable[TopicScores], measure: str) -> tuple[list[str], list[str], np.ndarray]:
    """Per-topic score matrix of one measure: (runids, topics, matrix of shape (runs, topics)).

    Topics are the union in order of first appearance; a topic a run was not scored on is NaN.
    """
    selected = [s for s in scores if s.measure == measure]
    topics: dict[str, int] = {}
    for s in selected:
        for topic in s.topics:
            topics.setdefault(topic, len(topics))
    matrix = np.full((len(selected), len(topics)), np.nan)
    for row, s in enumerate(selected):
        matrix[row, [topics[t] for t in s.topics]] = s.values
    return [s.runid for s in selected], list(topics), matrix


def _counted_topics(alignment: Alignment, family: MeasureFamily, options: EvaluationOptions) -> np.ndarray:
    keep = np.ones(alignment.topic_count, dtype=bool)
    if options.missing_topics == "drop":
        keep &= alignment.is_in_run
    elif options.missing_topics != "zero":
        raise ValueError(f"missing_topics must be 'drop' or 'zero', got {options.missing_topics!r}")
    if family.requires_relevant:
        keep &= ideal_lengths(alignment) > 0
    return keep


def _probability(value: float | int) -> str | None:
    return None if 0 < value < 1 else f"p must be in (0, 1), got {value}"


def _float(value: float | int | None) -> float:
    """The parameter of a family that has a default or requires one (``parse_measure`` fills it in)."""
    if value is None:
        raise ValueError("this measure needs a parameter")
    return float(value)


def _int(value: float | int | None) -> int:
    if value is None:
        raise ValueError("this measure needs a parameter")
    return int(value)


def _positive(value: float | int) -> str | None:
    return None if value >= 1 else f"the cutoff must be at least 1, got {value}"


register_measure(
    MeasureFamily(
        name="compat",
        description="compatibility: NRBO against the maximum-similarity ideal ranking (reference compatibility.py)",
        compute=lambda a, p, o: compatibility(a, p=_float(p), depth=o.depth, normalize=o.normalize),
        function=compatibility,
        parameter="float",
        default=DEFAULT_P,
        ordering=REFERENCE_ORDERING,
        requires_relevant=True,
        check=_probability,
    )
)
register_measure(
    MeasureFamily(
        name="ndcg",
        description="NDCG, linear gain = qrels value, log2(rank + 1) discount; @k cuts DCG and IDCG (trec_eval ndcg_cut.k)",
        compute=lambda a, k, o: trec.ndcg(a, None if k is None else int(k)),
        function=trec.ndcg,
        parameter="int",
        is_parameter_optional=True,
        check=_positive,
    )
)
register_measure(
    MeasureFamily(
        name="ap",
        description="average precision, binary relevance value >= threshold (trec_eval map)",
        compute=lambda a, _, o: trec.average_precision(a, o.threshold),
        function=trec.average_precision,
    )
)
register_measure(
    MeasureFamily(
        name="rr",
        description="reciprocal rank of the first relevant item (trec_eval recip_rank)",
        compute=lambda a, _, o: trec.reciprocal_rank(a, o.threshold),
        function=trec.reciprocal_rank,
    )
)
register_measure(
    MeasureFamily(
        name="p",
        description="precision at k (trec_eval P_k)",
        compute=lambda a, k, o: trec.precision(a, _int(k), o.threshold),
        function=trec.precision,
        parameter="int",
        check=_positive,
    )
)
register_measure(
    MeasureFamily(
        name="rbp",
        description="rank-biased precision, binary, whole run (Moffat and Zobel); default p = 0.95 as in Rashidi et al.",
        compute=lambda a, p, o: trec.rbp(a, _float(p), o.threshold),
        function=trec.rbp,
        parameter="float",
        default=0.95,
        check=_probability,
    )
)
register_measure(
    MeasureFamily(
        name="rbp_residual",
        description="RBP residual: the room left by unjudged items and the run's end (report [rbp, rbp + residual])",
        compute=lambda a, p, o: trec.rbp_residual(a, _float(p)),
        function=trec.rbp_residual,
        parameter="float",
        default=0.95,
        check=_probability,
        higher_is_better=False,
    )
)
register_measure(
    MeasureFamily(
        name="esl",
        description="expected search length (type 1): rank of the first relevant item; @N = corpus size for the worst case",
        compute=lambda a, n, o: trec.expected_search_length(a, _int(n), o.threshold),
        function=trec.expected_search_length,
        parameter="int",
        default=1000,
        check=_positive,
        higher_is_better=False,
    )
)


def _preference_precision(
    name: str, per_topic: Callable[[Alignment, int], np.ndarray], rule: str
) -> MeasureFamily:
    """Carterette et al.'s preference precision (metrics.core.preference). @k cuts the ranking at k; the bare
    name reads the first 1000 ranks, the usual TREC run depth (as compat and esl)."""
    return MeasureFamily(
        name=name,
        description=f"{name} (Carterette et al. 2008): {rule}; @k cuts the run",
        compute=lambda a, k, o: per_topic(a, _int(k)),
        function=per_topic,
        parameter="int",
        default=1000,
        check=_positive,
        requires_relevant=True,
    )


register_measure(
    _preference_precision(
        "ppref",
        ppref_per_topic,
        "share of judged preferences (higher value over lower) the run orders correctly",
    )
)
register_measure(
    _preference_precision(
        "wpref", wpref_per_topic, "ppref with each pair weighted by 1/log2(deeper rank + 1)"
    )
)
