"""Leaderboard plots as PNG, drawn on the server with matplotlib (Agg, no display) and cached until the
scores change: the paper's figure 4 (one measure against another, a dot per run) and figure 9 (runs sorted
by their mean with 95% confidence intervals); Assessing top-k preferences, section 5."""

from __future__ import annotations

import hashlib
import io

from django.core.cache import cache

from judging.models import Campaign
from metrics.leaderboard import campaign_leaderboard, leaderboard_stamp


def _key(*parts: str) -> str:
    """A cache key safe for any backend (no spaces or colons from measure names and timestamps)."""
    return "plot:" + hashlib.sha256("|".join(parts).encode()).hexdigest()


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.4), dpi=100)
    FigureCanvasAgg(figure)  # a canvas that can measure text, for the point labels
    return figure


def _png(figure) -> bytes:
    out = io.BytesIO()
    # No timestamps in the file: the same scores give the same bytes.
    figure.savefig(out, format="png", bbox_inches="tight", metadata={"Software": None})
    return out.getvalue()


def _rows(leaderboard, measure: str, qrels: str):
    return [row for row in leaderboard["rows"] if row.measure == measure and row.qrels == qrels]


def plot_scatter(*, campaign: Campaign, x: tuple[str, str], y: tuple[str, str]) -> bytes:
    """Figure 4: ``y`` (measure, qrels) against ``x`` for every run scored under both, with Kendall's tau."""
    key = _key("scatter", leaderboard_stamp(campaign=campaign), *x, *y)
    png = cache.get(key)
    if png is not None:
        return png
    leaderboard = campaign_leaderboard(campaign=campaign)
    xs = {row.run: row.mean for row in _rows(leaderboard, *x)}
    ys = {row.run: row.mean for row in _rows(leaderboard, *y)}
    runs = sorted(set(xs) & set(ys))
    figure = _figure()
    axes = figure.add_subplot()
    axes.scatter([xs[r] for r in runs], [ys[r] for r in runs], s=18, color="#1f4e79")
    if runs:
        import numpy as np

        from metrics.plot_labels import label_points

        label_points(figure, axes, np.array([xs[r] for r in runs]), np.array([ys[r] for r in runs]), runs)
    axes.set_xlabel(f"{x[0]} ({x[1]})")
    axes.set_ylabel(f"{y[0]} ({y[1]})")
    if len(runs) >= 2:
        import numpy as np

        from metrics.core.significance import kendall_tau

        tau = kendall_tau(np.array([xs[r] for r in runs]), np.array([ys[r] for r in runs]))
        axes.set_title(f"{len(runs)} runs, Kendall's tau = {tau:.3f}")
    else:
        axes.set_title(f"{len(runs)} runs")
    axes.grid(alpha=0.3)
    png = _png(figure)
    cache.set(key, png, timeout=24 * 3600)
    return png


def plot_intervals(*, campaign: Campaign, measure: str, qrels: str) -> bytes:
    """Figure 9: runs sorted by their mean under ``measure`` with their 95% bootstrap confidence intervals."""
    key = _key("intervals", leaderboard_stamp(campaign=campaign), measure, qrels)
    png = cache.get(key)
    if png is not None:
        return png
    rows = sorted(_rows(campaign_leaderboard(campaign=campaign), measure, qrels), key=lambda r: r.mean)
    figure = _figure()
    axes = figure.add_subplot()
    positions = list(range(len(rows)))
    axes.errorbar(
        positions,
        [r.mean for r in rows],
        yerr=[[r.mean - r.ci_low for r in rows], [r.ci_high - r.mean for r in rows]],
        fmt="o",
        markersize=4,
        capsize=2,
        color="#1f4e79",
    )
    axes.set_xticks(positions, [r.run for r in rows], rotation=90, fontsize=7)
    axes.set_ylabel(f"{measure} ({qrels})")
    axes.set_title(f"{len(rows)} runs, mean with 95% CI")
    axes.grid(alpha=0.3, axis="y")
    png = _png(figure)
    cache.set(key, png, timeout=24 * 3600)
    return png
