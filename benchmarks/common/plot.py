"""The frame of both reports' figures: two panels side by side, written as a PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def two_panels() -> tuple[Any, Any, Any]:
    """(figure, left, right), the left panel wider; matplotlib without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), width_ratios=(3, 2))
    return figure, left, right


def labelled_bars(
    axis: Any, labels: Sequence[str], values: Sequence[float], colors: Sequence[str]
) -> None:
    """Horizontal bars, top to bottom in the given order, each with its value at its end."""
    axis.barh(range(len(labels)), values, color=colors)
    for row, value in enumerate(values):
        axis.text(value, row, f" {value:.1f}", va="center", fontsize=7)
    axis.set_yticks(range(len(labels)))
    axis.set_yticklabels(labels, fontsize=8)
    axis.invert_yaxis()


def save(figure: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
