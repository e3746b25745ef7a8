"""The posterior over a topic's order when each judge is right with a fixed probability whatever the pair.

A judge who reverses an answer at random, as often on a clear pair as on a close one, is the noisy sorting model
of Braverman and Mossel ("Noisy sorting without resampling", SODA 2008, section 1): judge j's answer on a pair
follows the true order with probability q_j = (1 + eta_j) / 2, whatever the two items. Bradley-Terry reads
such a judge too weakly: one vote between two items of equal prior gives the order 0.76, not q = 0.9, since it
assumes the judge is unsure when the items are close (docs/decisions.md, "`p_top_k` calibration: the two causes
told apart").

Here each item keeps a latent score with the judge model's Gaussian prior (unit sd, so only the grades' weight
against the spread matters), and a vote's likelihood depends only on which of its two scores is higher. Given
the others, one item's conditional density is its prior times a step function that changes only at the scores
of the items it was compared with, so a Gibbs sweep draws each score exactly: pick the interval between two
neighbours' scores with probability (prior mass of the interval) x exp(summed evidence), then a truncated normal
inside it. Chains run side by side as numpy rows.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

# Parallel chains and the sweeps discarded before the first kept one. On random worlds (150 topics of 10 items,
# 24 votes a topic, judges reversing at random 20%), the calibration table of p_top_k moved by no more than its
# sampling error between 20, 100 and 400 discarded sweeps (docs/decisions.md, "`p_top_k` under noisy sorting").
CHAINS = 256
BURN_IN_SWEEPS = 20


def noisy_sorting_evidence(
    n: int, winners: npt.NDArray[np.int64], losers: npt.NDArray[np.int64], log_odds: FloatArray
) -> FloatArray:
    """The antisymmetric n x n matrix E with E[a, b] the summed log-odds log(q_j / (1 - q_j)) of the votes
    for a over b, less those for b over a: the log-likelihood of a set of votes rises by E[a, b] when a's score
    passes b's."""
    evidence = np.zeros((n, n))
    np.add.at(evidence, (winners, losers), log_odds)
    np.add.at(evidence, (losers, winners), -log_odds)
    return evidence


def noisy_sorting_draws(
    evidence: FloatArray,
    prior_mean: FloatArray,
    *,
    samples: int,
    rng: np.random.Generator,
    start: FloatArray | None = None,
) -> FloatArray:
    """``samples`` draws (rows) of the items' scores from the posterior given the pairwise ``evidence``
    (``noisy_sorting_evidence``) and the prior N(``prior_mean``, 1) per item, by Gibbs sampling (module
    docstring). Only the order of a draw's scores carries meaning. ``start`` (CHAINS x n) is where the chains
    begin, best near the posterior: a chain started from the prior must untangle a long run of agreeing votes
    one item at a time, each held between its neighbours' scores (default: the prior)."""
    from scipy.special import ndtr, ndtri  # loaded on first use: the CLI starts faster without scipy

    n = len(prior_mean)
    keep = max(1, -(-samples // CHAINS))
    scores = (
        prior_mean + rng.standard_normal((CHAINS, n)) if start is None else np.array(start, dtype=np.float64)
    )
    neighbours = [np.flatnonzero(evidence[i]) for i in range(n)]
    rows = np.arange(CHAINS)
    kept = []
    for sweep in range(BURN_IN_SWEEPS + keep):
        for i in rng.permutation(n):
            near = neighbours[i]
            if not len(near):
                scores[:, i] = prior_mean[i] + rng.standard_normal(CHAINS)
                continue
            # The neighbours' scores, centred on item i's prior mean, cut the line into len(near) + 1 intervals;
            # above the first t of them (in each chain's order) the log-likelihood has risen by their evidence.
            cuts = scores[:, near] - prior_mean[i]
            order = np.argsort(cuts, axis=1)
            cuts = np.take_along_axis(cuts, order, axis=1)
            rise = np.cumsum(evidence[i, near][order], axis=1)
            # Prior mass of each interval, from whichever tail keeps it accurate far from the mean.
            below, above = ndtr(cuts), ndtr(-cuts)
            zero, one = np.zeros((CHAINS, 1)), np.ones((CHAINS, 1))
            low_cdf, high_cdf = np.hstack([zero, below]), np.hstack([below, one])
            low_tail, high_tail = np.hstack([one, above]), np.hstack([above, zero])
            upper = np.hstack([np.zeros((CHAINS, 1), dtype=bool), cuts > 0])
            mass = np.where(upper, low_tail - high_tail, high_cdf - low_cdf)
            weight = np.log(np.maximum(mass, 1e-300))
            weight[:, 1:] += rise
            weight = np.exp(weight - weight.max(axis=1, keepdims=True))
            cumulative = np.cumsum(weight, axis=1)
            pick = (cumulative < rng.random(CHAINS)[:, None] * cumulative[:, -1:]).sum(axis=1)
            pick = np.minimum(pick, len(near))
            side = upper[rows, pick]
            start = np.where(side, high_tail[rows, pick], low_cdf[rows, pick])
            stop = np.where(side, low_tail[rows, pick], high_cdf[rows, pick])
            z = ndtri(np.clip(start + (stop - start) * rng.random(CHAINS), 1e-300, 1 - 1e-16))
            z = np.where(side, -z, z)
            lowest = np.where(pick == 0, -np.inf, cuts[rows, np.maximum(pick - 1, 0)])
            highest = np.where(pick == len(near), np.inf, cuts[rows, np.minimum(pick, len(near) - 1)])
            scores[:, i] = prior_mean[i] + np.clip(z, lowest, highest)
        if sweep >= BURN_IN_SWEEPS:
            kept.append(scores.copy())
    draws: FloatArray = np.concatenate(kept)[:samples]
    return draws
