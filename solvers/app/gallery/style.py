"""One matplotlib style for every gallery figure, and the one way to save them."""
from __future__ import annotations

import contextlib
from pathlib import Path

RC = {
    "figure.dpi": 110, "savefig.dpi": 110, "font.size": 9.5, "axes.titlesize": 10,
    "axes.labelsize": 10, "legend.fontsize": 7.5, "legend.frameon": False,
    "axes.grid": True, "grid.alpha": 0.25, "grid.linewidth": 0.5, "lines.linewidth": 1.4,
    "axes.spines.top": False, "axes.spines.right": False, "figure.constrained_layout.use": True,
}
PANEL = (4.6, 3.4)           # inches per panel: ~500 px wide at 110 dpi, legible on GitHub


@contextlib.contextmanager
def style():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with plt.rc_context(RC):
        yield plt


def panels(plt, n, rows=1, width=None):
    cols = -(-n // rows)
    w, h = PANEL if width is None else (width, PANEL[1])
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, list(axes[:n])


def save(fig, path: Path, *, small: bool, note: str | None = None) -> Path:
    """Write the PNG; a reduced-size run is stamped so it can never pass for the paper's size."""
    import matplotlib.pyplot as plt
    stamp = []
    if small:
        stamp.append("REDUCED-SIZE PLACEHOLDER (test parameters, not the paper's)")
    if note:
        stamp.append(note)
    if stamp:
        fig.text(0.5, 0.995, " · ".join(stamp), ha="center", va="top", fontsize=7.5,
                 color="firebrick" if small else "0.3")
        fig.get_layout_engine().set(rect=(0, 0, 1, 0.96))
    path = Path(path)
    if small:                      # never overwrite a full-size image with a placeholder
        path = path.with_name(path.stem + "_reduced" + path.suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


ALPHA = r"$\alpha$"
EPS = r"$\epsilon_g$"


def one_panel(out: Path, name: str, *, small: bool, width: float, draw, note: str | None = None) -> list:
    """A one-panel figure with a legend, ``draw(ax)`` filling the panel; saved as ``out / name``."""
    with style() as plt:
        fig, (ax,) = panels(plt, 1, width=width)
        draw(ax)
        ax.legend()
        return [save(fig, out / name, small=small, note=note)]
