"""Boxes and arrows for the flow pictures, drawn with matplotlib (no graphviz needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

COLOURS = {"python": "#dbe9f6", "compiled": "#fde2c8", "thread": "#e3f1dc", "wire": "#eeeeee"}


def figure(width, height):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def box(ax, x, y, w, h, text, kind="python", size=9):
    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.04", fc=COLOURS[kind], ec="#555555", lw=1
        )
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, family="monospace")


def arrow(ax, x1, y1, x2, y2, text=None):
    ax.annotate("", xy=(x2, y2), xytext=(x1, y1), arrowprops={"arrowstyle": "->", "color": "#333333"})
    if text:
        ax.text((x1 + x2) / 2 + 0.05, (y1 + y2) / 2, text, fontsize=8, color="#333333")


def legend(ax, x, y):
    for i, (kind, label) in enumerate(
        [("python", "Python"), ("compiled", "compiled (Cython)"), ("thread", "thread")]
    ):
        box(ax, x + i * 2.1, y, 1.9, 0.35, label, kind, size=8)


def save(fig, path):
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
