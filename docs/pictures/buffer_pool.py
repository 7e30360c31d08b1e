"""Pictures of the BufferPool chapter, drawn from a real pool's statistics() (so they cannot drift).

buffer_pool.png        the pool's memory as one bar, with nobody waiting and with two waiters
buffer_pool_cases.png  Java's four allocation cases: the bar before and after each allocate()
"""

import threading
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from kafkacore.core.buffer_pool import BufferPool  # noqa: E402

POOLABLE = 100
TOTAL = 800
COLOURS = {
    "allocated": "#c9c9c9",
    "reserved": "#f4b183",
    "free": "#a9d18e",
    "unallocated": "#dbe9f6",
}
LABELS = {
    "allocated": "handed out (batches)",
    "reserved": "set aside for the first waiter",
    "free": "free list (pooled buffers)",
    "unallocated": "unallocated (non-pooled)",
}


def _bar(ax, y, stats, label, height=0.5):
    """One bar of width total_memory: allocated | reserved | free buffers | unallocated."""
    x = 0
    parts = [
        ("allocated", stats.allocated_memory, 1),
        ("reserved", stats.reserved_memory, 1),
        ("free", stats.free_buffers * stats.poolable_size, stats.free_buffers),
        ("unallocated", stats.unallocated_memory, 1),
    ]
    for kind, width, pieces in parts:
        if width <= 0:
            continue
        step = width / pieces
        for i in range(pieces):  # one box per pooled buffer, so the free list reads as a list
            ax.add_patch(
                Rectangle((x + i * step, y), step, height, fc=COLOURS[kind], ec="#555555", lw=1)
            )
        ax.text(
            x + width / 2,
            y + height / 2,
            f"{pieces} x {stats.poolable_size}" if kind == "free" else str(width),
            ha="center",
            va="center",
            fontsize=8,
            bbox={"fc": COLOURS[kind], "ec": "none", "pad": 1},
        )
        x += width
    ax.text(-20, y + height / 2, label, ha="right", va="center", fontsize=9, family="monospace")


def _legend(ax):
    handles = [Patch(fc=COLOURS[k], ec="#555555", label=LABELS[k]) for k in COLOURS]
    ax.legend(handles=handles, loc="lower right", ncol=2, fontsize=8, frameon=False)


def _canvas(width, height, rows):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_xlim(-330, TOTAL + 20)
    ax.set_ylim(-0.8, rows)
    ax.axis("off")
    return fig, ax


def _wait_until(predicate):
    deadline = time.monotonic() + 5
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("the picture's pool did not reach the state to draw")
        time.sleep(0.001)


def draw_overview(out_dir):
    fig, ax = _canvas(9, 3.6, 4.2)
    # Nobody waiting: some batches out, two pooled buffers back on the free list.
    pool = BufferPool(TOTAL, POOLABLE)
    out = [pool.allocate(POOLABLE, 0) for _ in range(4)] + [pool.allocate(150, 0)]
    pool.deallocate(out.pop(0))
    pool.deallocate(out.pop(0))
    _bar(ax, 3.2, pool.statistics(), "nobody waiting")

    # Exhausted: two threads queue; memory that comes back is set aside for the first.
    pool = BufferPool(TOTAL, POOLABLE)
    held = [pool.allocate(POOLABLE, 0) for _ in range(8)]
    threads = []
    for size in (300, POOLABLE):
        before = pool.queued()
        t = threading.Thread(target=_try_allocate, args=(pool, size), daemon=True)
        t.start()
        threads.append(t)
        _wait_until(lambda before=before: pool.queued() == before + 1)
    pool.deallocate(held.pop())
    pool.deallocate(held.pop())
    stats = pool.statistics()
    _bar(ax, 1.6, stats, "two waiters")
    # The waiter queue, head first.
    ax.text(
        -20,
        0.85,
        "waiter queue, head first",
        ha="right",
        fontsize=9,
        va="center",
        family="monospace",
    )
    for i, (size, got) in enumerate(((300, stats.reserved_memory), (POOLABLE, 0))):
        x = 170 + i * 260
        ax.add_patch(Rectangle((x, 0.6), 220, 0.5, fc="#e3f1dc", ec="#555555", lw=1))
        ax.text(x + 110, 0.85, f"wants {size}, has {got}", ha="center", va="center", fontsize=8)
        if i:
            ax.annotate("", xy=(x, 0.85), xytext=(x - 40, 0.85), arrowprops={"arrowstyle": "<-"})
    pool.close()  # wakes both waiters (IllegalStateError); they give back what they held
    for t in threads:
        t.join(5)
    _legend(ax)
    fig.savefig(out_dir / "buffer_pool.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def _try_allocate(pool, size):
    try:
        pool.allocate(size, 10_000)
    except Exception:
        pass  # closed: the picture is drawn


def draw_cases(out_dir):
    cases = []

    # Case 1: batch.size asked, a pooled buffer is free: take it.
    pool = BufferPool(TOTAL, POOLABLE)
    out = [pool.allocate(POOLABLE, 0) for _ in range(3)]
    pool.deallocate(out.pop())
    pool.deallocate(out.pop())
    cases.append(("1. allocate(100): pooled buffer free", pool, POOLABLE))

    # Case 2: batch.size asked, free list empty: carve it out of unallocated memory.
    pool = BufferPool(TOTAL, POOLABLE)
    out = [pool.allocate(POOLABLE, 0) for _ in range(2)]
    cases.append(("2. allocate(100): free list empty", pool, POOLABLE))

    # Case 3: another size, free list empty: carve it out of unallocated memory.
    pool = BufferPool(TOTAL, POOLABLE)
    out = [pool.allocate(POOLABLE, 0) for _ in range(2)]
    cases.append(("3. allocate(250): free list empty", pool, 250))

    # Case 4: another size, unallocated memory short: free_up() drops pooled buffers first.
    pool = BufferPool(TOTAL, POOLABLE)
    out = [pool.allocate(POOLABLE, 0) for _ in range(8)]
    for _ in range(5):
        pool.deallocate(out.pop())
    cases.append(("4. allocate(250): free_up() first", pool, 250))

    fig, ax = _canvas(9, 6.2, 10.4)
    y = 9.6
    for title, pool, size in cases:
        ax.text(-330, y + 0.1, title, fontsize=9, weight="bold", va="center")
        _bar(ax, y - 0.8, pool.statistics(), "before", height=0.45)
        pool.allocate(size, 0)
        _bar(ax, y - 1.4, pool.statistics(), "after", height=0.45)
        y -= 2.4
    _legend(ax)
    fig.savefig(out_dir / "buffer_pool_cases.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(out_dir):
    draw_overview(out_dir)
    draw_cases(out_dir)
