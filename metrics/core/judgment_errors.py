"""Simulated assessor error (Rashidi, Zobel and Moffat, "The impact of judgment variability on the
consistency of offline effectiveness measures", ACM TOIS 2023, sections 3 and 4; digest in measures.md
section 4): perturb binary judgments ("attestments") into "judgoids" with a judge of given true and false
positive rates, re-evaluate, and measure how far a measure's conclusions survive.

Two judge types ([R] section 3.2):

- ``random`` (crowd-like): every judged non-relevant item flips on with probability FPR and every relevant
  item flips off with probability 1 - TPR, independently.
- ``rank_biased`` (expert-like, after Webber et al.): the expected number of flips per class is the same, but
  which items flip follows their meta-AP: popular non-relevant items flip on more, unpopular relevant items
  flip off more (logistic weights of Webber et al.'s TREC-6 fit, [R] Eq. 1).

Only judged items are perturbed; unjudged items stay non-relevant; topics are perturbed independently.
Relevance is a boolean array over the judged rows (qrels rows), with a topic code per row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy  # scipy.stats and scipy.special load on first use: the CLI starts faster without them

from metrics.core.evaluate import TREC_EVAL_ORDERING, EvaluationOptions, Measure
from metrics.core.ranking import Alignment, align, rank_run
from metrics.core.readers import Qrels, Run
from metrics.core.significance import kendall_tau, t_test

Judge = Literal["random", "rank_biased"]
JUDGES: tuple[str, ...] = ("random", "rank_biased")

# (disc, bias) settings used in [R]: the "smart neutral" expert of most figures, the extreme case of Figs
# 12a/13a, and Smucker and Jethani's primary (NIST) and secondary (crowd) assessors (measures.md 4.2).
JUDGE_SETTINGS: dict[str, tuple[float, float]] = {
    "smart-neutral": (3.0, 0.0),
    "extreme": (1.0, 1.0),
    "nist-primary": (2.3, 0.37),
    "crowd-secondary": (1.9, 0.14),
}

# Webber et al.'s TREC-6 logistic fit ([R] Table 1): (beta0, beta1) on meta-AP.
RETENTION_COEFFICIENTS = (-0.62, 0.53)  # P(a relevant item is judged relevant)
FLIP_ON_COEFFICIENTS = (-3.90, 1.20)  # P(a non-relevant item is judged relevant)
META_AP_DEPTH = 1000


# The standard library's normal distribution: exact enough here, and it keeps scipy.stats off the start-up path.
_STANDARD_NORMAL = NormalDist()


def judge_rates(disc: float, bias: float) -> tuple[float, float]:
    """(TPR, FPR) of a judge with discrimination ``disc`` and bias ``bias`` (signal detection, Li and
    Smucker; [R] section 3.1): ``TPR = Phi(disc/2 - bias)``, ``FPR = Phi(-disc/2 - bias)``."""
    return _STANDARD_NORMAL.cdf(disc / 2 - bias), _STANDARD_NORMAL.cdf(-disc / 2 - bias)


def judge_parameters(tpr: float, fpr: float) -> tuple[float, float]:
    """Inverse of ``judge_rates``: ``disc = z(TPR) - z(FPR)``, ``bias = -(z(TPR) + z(FPR)) / 2``."""
    z_tpr, z_fpr = _STANDARD_NORMAL.inv_cdf(tpr), _STANDARD_NORMAL.inv_cdf(fpr)
    return float(z_tpr - z_fpr), float(-(z_tpr + z_fpr) / 2)


def meta_ap(positions: np.ndarray, *, depth: int = META_AP_DEPTH) -> np.ndarray:
    """Meta-AP of items over a set of runs (Aslam et al. as written in [R] section 3.2): a run ranking an
    item at 1-based rank ``k <= N`` contributes ``1 + H_N - H_k`` (``H_k = sum_{i<=k} 1/i``), otherwise 0,
    and meta-AP is the mean over the K runs. ``N = depth`` is fixed for every run (measures.md A19).

    ``positions``: shape ``(K, n)``, 1-based ranks, ``inf`` (or anything > depth) when not ranked.
    Returns shape ``(n,)``. Rank 1 in every run gives ``H_1000 = 7.4855`` ([R]: "7.5").
    """
    positions = np.asarray(positions, dtype=np.float64)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, depth + 1))])
    is_ranked = np.isfinite(positions) & (positions >= 1) & (positions <= depth)
    ranks = np.where(is_ranked, positions, 1).astype(np.int64)
    contribution = np.where(is_ranked, 1.0 + harmonic[depth] - harmonic[ranks], 0.0)
    return contribution.mean(axis=0) if positions.shape[0] else np.zeros(positions.shape[1])


def retention_weights(meta_aps: np.ndarray) -> np.ndarray:
    """Propensity of a relevant item to stay relevant: ``sigmoid(-0.62 + 0.53 * metaAP)`` ([R] Eq. 1)."""
    return np.asarray(
        scipy.special.expit(
            RETENTION_COEFFICIENTS[0] + RETENTION_COEFFICIENTS[1] * np.asarray(meta_aps, dtype=np.float64)
        ),
        dtype=np.float64,
    )


def flip_on_weights(meta_aps: np.ndarray) -> np.ndarray:
    """Propensity of a non-relevant item to be judged relevant: ``sigmoid(-3.90 + 1.20 * metaAP)``."""
    return np.asarray(
        scipy.special.expit(
            FLIP_ON_COEFFICIENTS[0] + FLIP_ON_COEFFICIENTS[1] * np.asarray(meta_aps, dtype=np.float64)
        ),
        dtype=np.float64,
    )


def inclusion_probabilities(weights: npt.ArrayLike, expected_size: float) -> npt.NDArray[np.float64]:
    """Per-item selection probabilities of [R]'s ``weighted_subset`` (Fig. 3; closed forms in measures.md
    4.4): with ``n`` items of mean weight ``w_bar`` and target ``n'``, ``P(d) = w_d * n' / sum w`` when
    ``w_bar >= n'/n``, otherwise the complement rule ``P(d) = 1 - (1 - w_d)(n - n') / sum (1 - w)``. The
    probabilities sum to ``n'``. Edge cases (measures.md A15): ``n' <= 0`` gives 0, ``n' >= n`` gives 1;
    weights are clipped to ``[1e-9, 1 - 1e-9]``. Equal weights give ``n'/n`` for every item."""
    clipped = np.clip(np.asarray(weights, dtype=np.float64), 1e-9, 1 - 1e-9)
    count = clipped.shape[0]
    if count == 0 or expected_size <= 0:
        return np.zeros(count)
    if expected_size >= count:
        return np.ones(count)
    if clipped.mean() >= expected_size / count:
        return clipped * expected_size / float(clipped.sum())
    complement = 1.0 - clipped
    probabilities: npt.NDArray[np.float64] = 1.0 - complement * (count - expected_size) / float(
        complement.sum()
    )
    return probabilities


def perturb_relevance(
    relevance: np.ndarray,
    topic: np.ndarray,
    *,
    tpr: float,
    fpr: float,
    judge: Judge = "random",
    meta_aps: np.ndarray | None = None,
    rng: np.random.Generator,
) -> np.ndarray:
    """One judgoid set ([R] Fig. 2): per topic, a subset of the ``|q0|`` non-relevant items of expected size
    ``|q0| * FPR`` flips on and a subset of the ``|q1|`` relevant items of expected size ``|q1| * TPR`` stays
    on (the rest flip off), drawn with ``inclusion_probabilities`` from the judge's weights (constant for
    ``random``; meta-AP logistic weights for ``rank_biased``). Sizes hold in expectation only.

    ``relevance``: bool, shape ``(J,)``, one per judged row; ``topic``: int codes, shape ``(J,)``;
    ``meta_aps``: shape ``(J,)``, needed for ``rank_biased``. Returns a new bool array ``(J,)``.
    """
    if judge not in JUDGES:
        raise ValueError(f"judge must be one of {JUDGES}, not {judge!r}")
    if not (0 <= tpr <= 1 and 0 <= fpr <= 1):
        raise ValueError(f"TPR and FPR must lie in [0, 1], got {tpr} and {fpr}")
    relevance = np.asarray(relevance, dtype=bool)
    topic = np.asarray(topic)
    if judge == "rank_biased":
        if meta_aps is None:
            raise ValueError("the rank_biased judge needs the meta-AP of every judged item")
        keep_weight, flip_weight = retention_weights(meta_aps), flip_on_weights(meta_aps)
    else:
        keep_weight = flip_weight = np.full(relevance.shape, 0.5)
    probability = np.empty(relevance.shape)
    order = np.argsort(topic, kind="stable")
    bounds = np.flatnonzero(np.diff(topic[order])) + 1
    for rows in np.split(order, bounds):
        relevant_rows, other_rows = rows[relevance[rows]], rows[~relevance[rows]]
        probability[relevant_rows] = inclusion_probabilities(
            keep_weight[relevant_rows], len(relevant_rows) * tpr
        )
        probability[other_rows] = inclusion_probabilities(flip_weight[other_rows], len(other_rows) * fpr)
    return rng.random(relevance.shape) < probability


@dataclass(frozen=True)
class Stability:
    """How one measure's conclusions survive ``sets`` judgoid sets ([R] sections 4 and 5).

    ``kendall_tau[j]``: tau-b between the run ordering (mean over topics) under judgoid set j and under
    the attestments. ``significant_pairs``: (set, run pair) cases with a two-sided paired t-test p < 0.05
    under the judgoids; ``agreement``: the share of those where the attestments order the pair the same way
    (nan when there are none). ``mapped_p``: the attestment one-sided p-values, oriented by the judgoid
    winner, of the cases with judgoid p in [0.005, 0.015] ([R] section 5.5; p > 0.5 means reversed).
    ``flip_rate``: the observed share of relevant items judged non-relevant and of non-relevant judged
    relevant, over all sets (compare with 1 - TPR and FPR).
    """

    judge: str
    tpr: float
    fpr: float
    sets: int
    kendall_tau: np.ndarray
    significant_pairs: int
    agreement: float
    mapped_p: np.ndarray
    flip_rate: tuple[float, float]


def judgment_error_stability(
    score: Callable[[np.ndarray], np.ndarray],
    relevance: np.ndarray,
    topic: np.ndarray,
    *,
    tpr: float,
    fpr: float,
    judge: Judge = "random",
    meta_aps: np.ndarray | None = None,
    sets: int = 100,
    seed: int = 0,
    progress: Callable[[Iterable[int]], Iterable[int]] = iter,
) -> Stability:
    """Run [R]'s inverted protocol for one measure and one judge: draw ``sets`` judgoid sets (set j seeded
    with ``(seed, j)``, so results do not depend on how many sets run), score every run on every topic under
    each, and compare with the attestment scores (see ``Stability``).

    ``score(relevance) -> (Q, K)``: per-topic scores of the K runs for a bool relevance array over the
    judged rows (the caller binds the runs and the measure; topics whose scores are undefined must be
    scored 0, as [R] does for a topic left without relevant items, measures.md A2). ``relevance``, ``topic``
    and ``meta_aps`` as in ``perturb_relevance``. ``progress`` wraps the loop over sets (e.g. ``tqdm``).
    """
    relevance = np.asarray(relevance, dtype=bool)
    truth = np.asarray(score(relevance), dtype=np.float64)
    taus: list[float] = []
    mapped: list[float] = []
    agreements: list[bool] = []
    flipped_off = flipped_on = 0
    for set_index in progress(range(sets)):
        rng = np.random.default_rng([seed, set_index])
        judgoids = perturb_relevance(
            relevance, topic, tpr=tpr, fpr=fpr, judge=judge, meta_aps=meta_aps, rng=rng
        )
        flipped_off += int((relevance & ~judgoids).sum())
        flipped_on += int((~relevance & judgoids).sum())
        observed = np.asarray(score(judgoids), dtype=np.float64)
        taus.append(kendall_tau(observed.mean(axis=0), truth.mean(axis=0)))
        pair_p, pair_agreement, pair_mapped = _pair_outcomes(observed, truth)
        agreements.extend(pair_agreement[pair_p < 0.05])
        mapped.extend(pair_mapped[(pair_p >= 0.005) & (pair_p <= 0.015)])
    relevant_count, other_count = int(relevance.sum()), int((~relevance).sum())
    return Stability(
        judge=judge,
        tpr=tpr,
        fpr=fpr,
        sets=sets,
        kendall_tau=np.array(taus),
        significant_pairs=len(agreements),
        agreement=float(np.mean(agreements)) if agreements else float("nan"),
        mapped_p=np.array(mapped),
        flip_rate=(
            flipped_off / (relevant_count * sets) if relevant_count and sets else float("nan"),
            flipped_on / (other_count * sets) if other_count and sets else float("nan"),
        ),
    )


def _pair_outcomes(observed: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every run pair: judgoid two-sided p, whether the attestment means agree in direction, and the
    attestment one-sided p in the judgoid winner's direction."""
    upper = np.triu_indices(observed.shape[1], 1)
    observed_difference = observed[:, upper[0]] - observed[:, upper[1]]
    true_difference = truth[:, upper[0]] - truth[:, upper[1]]
    direction = np.where(observed_difference.mean(axis=0) >= 0, 1.0, -1.0)
    oriented = true_difference * direction
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        one_sided = scipy.stats.ttest_1samp(oriented, 0.0, axis=0, alternative="greater").pvalue
    # Constant differences have no variance: certain in their direction, 0.5 when they are all zero.
    is_constant = np.all(oriented == oriented[:1], axis=0)
    constant_p = 0.5 - 0.5 * np.sign(oriented[0])
    one_sided = np.where(is_constant, constant_p, one_sided)
    agreement = np.sign(oriented.mean(axis=0)) > 0
    return t_test(observed_difference), agreement.astype(np.float64), one_sided


@dataclass(frozen=True)
class JudgmentErrorInput:
    """Everything ``judgment_error_stability`` needs for runs scored by one registry measure.

    ``relevance``/``topic``/``meta_aps``: one entry per qrels row (qrels order) of the topics with at least
    one relevant item; ``score(relevance) -> (Q, K)`` scores every run on exactly those topics (a topic a
    run lacks counts as an empty ranking, and a topic left without relevant items by a judgoid set scores
    0: the topic set stays fixed, measures.md A2). Judgments become binary: relevant = value >= threshold
    (the judgoids are 0/1, so graded measures see gains 0/1, as in [R]).
    """

    topics: list[str]
    relevance: np.ndarray
    topic: np.ndarray
    meta_aps: np.ndarray
    score: Callable[[np.ndarray], np.ndarray]


def judgment_error_input(
    qrels: Qrels, runs: Sequence[Run], measure: Measure, options: EvaluationOptions | None = None
) -> JudgmentErrorInput:
    """Prepare [R]'s simulation for ``measure`` over ``runs``: align each run once with the measure's
    ordering, and re-score by swapping the judged values (the alignment's judged rows are the qrels rows
    grouped by topic, so a perturbation never needs a new alignment). Meta-AP is computed over the same
    runs with the trec_eval ordering, N = 1000."""
    options = options or EvaluationOptions()
    topic_names, codes = np.unique(qrels.topic.astype(str), return_inverse=True)
    is_relevant = qrels.value >= options.threshold
    kept_topics = np.flatnonzero(np.bincount(codes[is_relevant], minlength=len(topic_names)) > 0)
    keep_row = np.isin(codes, kept_topics)
    kept = Qrels(
        topic=qrels.topic[keep_row],
        docid=qrels.docid[keep_row],
        value=is_relevant[keep_row].astype(np.float64),
    )
    kept_names, kept_codes = np.unique(kept.topic.astype(str), return_inverse=True)
    topics = [str(name) for name in kept_names]
    topic_index = {name: i for i, name in enumerate(topics)}
    ordering = measure.family.ordering
    alignments, rows, columns, meta_positions = [], [], [], []
    for run in runs:
        alignment = align(kept, rank_run(run, ties=ordering.ties, duplicates=ordering.duplicates))
        order = _alignment_rows(alignment, kept_codes, topic_index)
        alignments.append(alignment)
        rows.append(order)
        columns.append(np.array([topic_index[t] for t in alignment.topics]))
        # Meta-AP reads the trec_eval ordering: the measure's own alignment when it already uses it.
        trec = (
            alignment
            if ordering == TREC_EVAL_ORDERING
            else align(
                kept, rank_run(run, ties=TREC_EVAL_ORDERING.ties, duplicates=TREC_EVAL_ORDERING.duplicates)
            )
        )
        position = np.empty(len(kept))
        position[_alignment_rows(trec, kept_codes, topic_index)] = np.where(
            trec.position >= 0, trec.position + 1.0, np.inf
        )
        meta_positions.append(position)
    binary_options = replace(options, threshold=1.0)

    def score(relevance: np.ndarray) -> np.ndarray:
        matrix = np.zeros((len(topics), len(alignments)))
        values = np.asarray(relevance, dtype=np.float64)
        for k, (alignment, order, column) in enumerate(zip(alignments, rows, columns, strict=True)):
            perturbed = replace(alignment, value=values[order])
            scores = np.nan_to_num(
                np.asarray(measure.compute(perturbed, binary_options), dtype=np.float64), nan=0.0
            )
            matrix[column, k] = scores
        return matrix

    meta_aps = meta_ap(np.vstack(meta_positions)) if meta_positions else np.zeros(len(kept))
    return JudgmentErrorInput(
        topics=topics, relevance=kept.value > 0, topic=kept_codes, meta_aps=meta_aps, score=score
    )


def _alignment_rows(alignment: Alignment, codes: np.ndarray, topic_index: dict[str, int]) -> np.ndarray:
    """For each judged row of the alignment, its qrels row: the alignment groups qrels rows by its own
    topic order and keeps qrels order inside a topic (``metrics.core.ranking.Alignment``)."""
    rank_of_topic = np.empty(len(topic_index), dtype=np.int64)
    rank_of_topic[[topic_index[t] for t in alignment.topics]] = np.arange(len(alignment.topics))
    order = np.argsort(rank_of_topic[codes], kind="stable")
    if len(order) != len(alignment.value):
        raise ValueError("the alignment does not cover the qrels rows")
    return order
