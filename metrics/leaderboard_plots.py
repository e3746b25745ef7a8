"""Leaderboard figures, drawn on the server with matplotlib (Agg, no display) as SVG for the page (crisp at any
zoom, text kept as text) and as PNG for download, cached until the scores change: the paper's figure 4 (one
measure against another, a dot per run) and figure 9 (runs sorted by their mean with 95% confidence
intervals); Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 5.

The numbers a figure draws come from ``scatter_points`` and ``interval_rows``, which read the one leaderboard
(``metrics.leaderboard.campaign_leaderboard``, i.e. ``metrics.core.comparison``); the page's tables under the
figures read the same two functions, so a figure and its table cannot disagree.
"""

from __future__ import annotations

import hashlib
import io
import threading
from typing import Any

from django.core.cache import cache

from judging.models import Campaign
from metrics.core.evaluate import parse_measure
from metrics.core.legend import measure_title
from metrics.leaderboard import LeaderboardRow, campaign_leaderboard, leaderboard_stamp

FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
# Sizes in points; an SVG shown at its own size draws 1 pt as 4/3 px, so 8 pt is 10.7 px at 100% zoom.
LABEL_POINTS = 8
TICK_POINTS = 9
AXIS_POINTS = 10
# Families whose every value lies in [0, 1]: their axes never run past those bounds (no ndcg axis to 1.1).
UNIT_INTERVAL = {"compat", "ndcg", "ap", "rr", "p", "rbp"}
# Matplotlib is not thread-safe, and the SVG options are process-wide settings (rcParams) that a rc_context sets
# and restores: two figures drawn at once by a threaded server (a page asks for both of its figures together)
# could restore the other's settings mid-drawing, and one SVG came out with its text as outlines. One figure is
# drawn at a time; a drawn figure is cached, so they rarely wait.
DRAWING = threading.RLock()


def _key(*parts: str) -> str:
    """A cache key safe for any backend (no spaces or colons from measure names and timestamps)."""
    return "plot:v2:" + hashlib.sha256("|".join(parts).encode()).hexdigest()


def _figure(width: float = 6.4, height: float = 4.4):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)  # a canvas that can measure text, for the point labels
    return figure


def _render(figure, format: str) -> bytes:
    import matplotlib

    out = io.BytesIO()
    # No timestamps and fixed element ids: the same scores give the same bytes. Text stays text in the SVG
    # (selectable, read by the browser's own font at any zoom).
    with DRAWING, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "toppref"}):
        if format == "svg":
            figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
        else:
            figure.savefig(out, format="png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    return out.getvalue()


def _limits(measure: str, values: list[float]) -> tuple[float, float] | None:
    """An axis range around ``values`` with a small margin; for a measure bounded by [0, 1] the margin may
    pass a bound by the width of a dot (so that a run at 1 is drawn whole) but no tick lies beyond it."""
    if not values:
        return None
    low, high = min(values), max(values)
    margin = max(0.05 * (high - low), 0.02)
    low, high = low - margin, high + margin
    if parse_measure(measure).family.name in UNIT_INTERVAL:
        low, high = max(-0.015, low), min(1.015, high)
    return low, high


def _axis_label(measure: str, qrels: str) -> str:
    """The measure in words over its code name, two lines, so that a long name fits beside a short axis."""
    return f"{measure_title(measure, qrels)}\n({measure}:{qrels})"


def _rows(leaderboard: dict[str, Any], measure: str, qrels: str) -> list[LeaderboardRow]:
    return [row for row in leaderboard["rows"] if row.measure == measure and row.qrels == qrels]


def scatter_points(
    *, leaderboard: dict[str, Any], x: tuple[str, str], y: tuple[str, str]
) -> list[tuple[str, float, float]]:
    """Figure 4's numbers: (run, mean under ``x``, mean under ``y``) for every run scored under both, by name."""
    xs = {row.run: row.mean for row in _rows(leaderboard, *x)}
    ys = {row.run: row.mean for row in _rows(leaderboard, *y)}
    return [(run, xs[run], ys[run]) for run in sorted(set(xs) & set(ys))]


def interval_rows(*, leaderboard: dict[str, Any], measure: str, qrels: str) -> list[LeaderboardRow]:
    """Figure 9's numbers: the leaderboard rows of one measure and qrels, best mean first."""
    higher = parse_measure(measure).family.higher_is_better
    return sorted(
        _rows(leaderboard, measure, qrels), key=lambda row: (-row.mean if higher else row.mean, row.run)
    )


def plot_scatter(*, campaign: Campaign, x: tuple[str, str], y: tuple[str, str], format: str = "svg") -> bytes:
    """Figure 4: ``y`` (measure, qrels) against ``x`` for every run scored under both, with Kendall's tau."""
    key = _key("scatter", format, leaderboard_stamp(campaign=campaign), *x, *y)
    image = cache.get(key)
    if image is not None:
        return image
    import numpy as np

    points = scatter_points(leaderboard=campaign_leaderboard(campaign=campaign), x=x, y=y)
    runs = [run for run, _, _ in points]
    xs = np.array([value for _, value, _ in points], dtype=float)
    ys = np.array([value for _, _, value in points], dtype=float)
    with DRAWING:
        figure = _figure()
        axes = figure.add_subplot()
        axes.scatter(xs, ys, s=18, color="#1f4e79", zorder=3)
        if runs:
            from metrics.plot_labels import label_points

            label_points(
                figure,
                axes,
                xs,
                ys,
                runs,
                fontsize=LABEL_POINTS,
                limits=(_limits(x[0], list(xs)), _limits(y[0], list(ys))),
            )
        axes.set_xlabel(_axis_label(*x), fontsize=AXIS_POINTS)
        axes.set_ylabel(_axis_label(*y), fontsize=AXIS_POINTS)
        axes.tick_params(labelsize=TICK_POINTS)
        if len(runs) >= 2:
            from metrics.core.significance import kendall_tau

            tau = kendall_tau(xs, ys)
            axes.set_title(f"{len(runs)} runs, Kendall's tau = {tau:.3f}", fontsize=AXIS_POINTS)
        else:
            axes.set_title(f"{len(runs)} runs", fontsize=AXIS_POINTS)
        axes.grid(alpha=0.3)
        image = _render(figure, format)
    cache.set(key, image, timeout=24 * 3600)
    return image


def plot_intervals(*, campaign: Campaign, measure: str, qrels: str, format: str = "svg") -> bytes:
    """Figure 9, turned on its side so that every run's name reads horizontally: one row per run, best at the
    top, its mean under ``measure`` with its 95% bootstrap confidence interval."""
    key = _key("intervals", format, leaderboard_stamp(campaign=campaign), measure, qrels)
    image = cache.get(key)
    if image is not None:
        return image
    rows = interval_rows(leaderboard=campaign_leaderboard(campaign=campaign), measure=measure, qrels=qrels)
    with DRAWING:
        figure = _figure(height=max(2.4, 0.9 + 0.22 * len(rows)))
        axes = figure.add_subplot()
        positions = list(range(len(rows)))
        axes.errorbar(
            [r.mean for r in rows],
            positions,
            xerr=[[r.mean - r.ci_low for r in rows], [r.ci_high - r.mean for r in rows]],
            fmt="o",
            markersize=4,
            capsize=2,
            color="#1f4e79",
        )
        axes.set_yticks(positions, [r.run for r in rows], fontsize=TICK_POINTS)
        axes.invert_yaxis()  # the best run on top, as a leaderboard reads
        axes.tick_params(axis="x", labelsize=TICK_POINTS)
        limits = _limits(measure, [r.ci_low for r in rows] + [r.ci_high for r in rows])
        if limits is not None:
            axes.set_xlim(*limits)
        axes.set_xlabel(_axis_label(measure, qrels), fontsize=AXIS_POINTS)
        axes.set_ylabel("Run (best mean first)", fontsize=AXIS_POINTS)
        axes.set_title(f"{len(rows)} runs, mean with 95% confidence interval", fontsize=AXIS_POINTS)
        axes.grid(alpha=0.3, axis="x")
        image = _render(figure, format)
    cache.set(key, image, timeout=24 * 3600)
    return image
