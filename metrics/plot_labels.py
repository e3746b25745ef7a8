"""Point labels of the scatter figures, shared by the command line (``toppref plot``) and the dashboard (the
leaderboard's figure 4): no Django here, so the file-only CLI can import it."""

from __future__ import annotations

from typing import Any

import numpy as np

Limits = tuple[float, float] | None


def label_points(
    figure: Any,
    axes: Any,
    xs: np.ndarray,
    ys: np.ndarray,
    names: list[str],
    *,
    fontsize: float = 8,
    limits: tuple[Limits, Limits] = (None, None),
) -> None:
    """Name every point to its right (to its left where the name would leave the axes); labels that would
    overlap are pushed apart vertically (passes of pairwise repulsion on the labels' measured boxes in screen
    space, as adjustText does) and joined to their point by a thin leader line when moved. ``limits`` (x, y)
    fixes an axis's range (a measure bounded by [0, 1] is never drawn past 1); without them the x axis leaves
    room on the right for the names."""
    span_x = float(np.ptp(xs)) or 1.0
    span_y = float(np.ptp(ys)) or 1.0
    x_limits, y_limits = limits
    axes.set_xlim(x_limits or (float(xs.min()) - 0.05 * span_x, float(xs.max()) + 0.30 * span_x))
    axes.set_ylim(y_limits or (float(ys.min()) - 0.08 * span_y, float(ys.max()) + 0.08 * span_y))
    texts = [
        axes.text(x, y, name, fontsize=fontsize, va="center")
        for x, y, name in zip(xs, ys, names, strict=True)
    ]
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    extents = [text.get_window_extent(renderer) for text in texts]
    widths = np.array([extent.width for extent in extents]) + 2.0
    height = max(extent.height for extent in extents) + 1.0
    to_pixels = axes.transData
    points = to_pixels.transform(np.column_stack([xs, ys]))
    gap = 4.0
    labels = points + np.array([gap, 0.0])  # left end, vertical centre
    right_edge = axes.transAxes.transform((1.0, 0.0))[0]
    leftward = labels[:, 0] + widths > right_edge
    labels[leftward, 0] = points[leftward, 0] - gap - widths[leftward]
    for _ in range(500):
        moved = False
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                overlap_x = min(labels[i, 0] + widths[i], labels[j, 0] + widths[j]) - max(
                    labels[i, 0], labels[j, 0]
                )
                overlap_y = height - abs(labels[i, 1] - labels[j, 1])
                if overlap_x > 0 and overlap_y > 0:
                    push = overlap_y / 2 + 0.25
                    direction = 1.0 if (labels[i, 1], j) >= (labels[j, 1], i) else -1.0
                    labels[i, 1] += direction * push
                    labels[j, 1] -= direction * push
                    moved = True
        if not moved:
            break
    positions = to_pixels.inverted().transform(labels)
    for text, point, label, position in zip(texts, points, labels, positions, strict=True):
        text.set_position(position)
        if abs(label[1] - point[1]) > height / 2:
            axes.annotate(
                "",
                xy=to_pixels.inverted().transform(point),
                xytext=position,
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5", "shrinkA": 0, "shrinkB": 2},
            )
