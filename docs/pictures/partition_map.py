"""Picture of the CopyOnWriteMap chapter: readers keep the snapshot they loaded, a writer swaps.

partition_map.png  one reference, two snapshots: the old one still read, the new one published
"""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(10, 5.3)
    b, a = _boxes.box, _boxes.arrow
    red = "#b03030"

    # The map object: a single reference to the current snapshot.
    b(ax, 0.2, 3.4, 2.4, 0.7, "CopyOnWriteMap\n._map", "compiled")

    # Old snapshot (still read) and the new one (published by the writer).
    b(ax, 3.6, 3.3, 3.0, 0.95, "snapshot v1\n(orders,0) -> deque\n(orders,1) -> deque", size=8)
    ax.text(3.6, 4.45, "never changed once published", fontsize=8)
    b(
        ax,
        3.6,
        1.3,
        3.0,
        1.2,
        "snapshot v2 (a copy)\n(orders,0) -> deque\n(orders,1) -> deque\n(orders,2) -> deque",
        size=8,
    )
    ax.text(0.2, 1.5, "v2 holds the same deques:\nonly the dict is copied", fontsize=8)

    # Readers: they loaded _map once, before the swap, and keep reading v1.  No lock.
    b(ax, 7.4, 3.75, 2.4, 0.55, "reader: get(tp)", "thread", size=8)
    b(ax, 7.4, 2.9, 2.4, 0.55, "reader: items()", "thread", size=8)
    a(ax, 7.4, 4.02, 6.6, 3.85)
    a(ax, 7.4, 3.17, 6.6, 3.5)
    ax.text(7.45, 2.35, "loaded v1 before the swap;\nkeep it while they read", fontsize=8)

    # The writer: copy, change, swap, under the write lock.
    b(ax, 3.6, 0.1, 3.0, 0.6, "writer: put((orders,2), deque)\nlock, copy, add, swap", "thread", 8)
    a(ax, 5.1, 0.7, 5.1, 1.3)

    # _map: pointed at v1, now at v2 (one reference store).
    ax.annotate("", xy=(3.6, 3.75), xytext=(2.6, 3.75), arrowprops={"arrowstyle": "->"})
    ax.text(2.75, 3.85, "was", fontsize=8)
    ax.annotate(
        "",
        xy=(3.6, 2.0),
        xytext=(2.6, 3.5),
        arrowprops={"arrowstyle": "->", "color": red, "linestyle": "--"},
    )
    ax.text(0.2, 2.75, "now: the swap is\none reference store", fontsize=8, color=red)
    _boxes.legend(ax, 0.2, 4.85)
    _boxes.save(fig, out_dir / "partition_map.png")
