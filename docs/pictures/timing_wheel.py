"""Pictures of the timing wheel and purgatory chapters, drawn from a real timer (so they cannot drift).

timing_wheel.png  Kafka's worked example (tasks at 8, 8, 25, 30, 35 ms): the two wheels at 0 ms,
                  and at 20 ms after the second wheel's bucket fell into the first
purgatory.png     watcher lists per key beside the timer, for three delayed operations
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from kafkacore.broker.server_common.purgatory import (  # noqa: E402
    DelayedOperation,
    DelayedOperationPurgatory,
)
from kafkacore.broker.server_common.timer import SystemTimer, TimerTask  # noqa: E402

EMPTY, FULL = "#f4f4f4", "#f4b183"


class _Named(TimerTask):
    def __init__(self, name, delay_ms):
        super().__init__(delay_ms)
        self.name = name

    def run(self):
        pass


def _contents(wheel):
    found = {}
    for i, bucket in enumerate(wheel.buckets):
        names = []
        bucket.foreach(lambda task, names=names: names.append(f"{task.name}"))
        if names:
            found[i] = (names, bucket.get_expiration())
    return found


def _draw_wheel(ax, y, wheel, label):
    ax.text(-0.3, y + 0.45, label, ha="right", va="center", fontsize=9, family="monospace")
    for i in range(wheel.wheel_size):
        ax.add_patch(Rectangle((i, y), 1, 0.9, fc=EMPTY, ec="#888888", lw=0.8))
        ax.text(i + 0.5, y - 0.2, str(i), ha="center", va="center", fontsize=6, color="#666666")
    for i, (names, expiration) in _contents(wheel).items():
        ax.add_patch(Rectangle((i, y), 1, 0.9, fc=FULL, ec="#555555", lw=1))
        ax.text(i + 0.5, y + 0.45, "\n".join(names), ha="center", va="center", fontsize=7)
        ax.text(i + 0.5, y + 1.1, f"{expiration} ms", ha="center", fontsize=6, color="#a0522d")


def _example():
    now = [0]
    timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=lambda: now[0])
    for name, delay in [("8", 8), ("8'", 8), ("25", 25), ("30", 30), ("35", 35)]:
        timer.add(_Named(name, delay))
    return timer, now


def draw_wheels(out_dir):
    timer, now = _example()
    fig, ax = plt.subplots(figsize=(12, 6.2))
    ax.set_xlim(-6, 21)
    ax.set_ylim(-0.8, 10.5)
    ax.axis("off")
    first, second = timer.timing_wheel, timer.timing_wheel.overflow_wheel
    ax.text(-6, 10.1, "at 0 ms: after adding tasks due at 8, 8, 25, 30, 35 ms", fontsize=10)
    _draw_wheel(ax, 7.8, first, f"wheel 1\ntick {first.tick_ms} ms\n0..19 ms")
    _draw_wheel(ax, 5.6, second, f"wheel 2\ntick {second.tick_ms} ms\n0..399 ms")
    for now[0] in range(1, 21):
        timer.advance_clock(0)
    ax.text(
        -6,
        3.9,
        "at 20 ms: 8 and 8' ran at 8 ms; wheel 2's bucket 1 expired and its tasks fell into wheel 1",
        fontsize=10,
    )
    _draw_wheel(ax, 1.6, first, f"wheel 1\ntick {first.tick_ms} ms\n20..39 ms")
    ax.text(
        -6,
        0.4,
        "Only buckets go into the delay queue (a heap ordered by the bucket's expiration):\n"
        "two entries at 0 ms for five tasks; cancelling a task just unlinks it from its bucket.",
        fontsize=8,
        color="#333333",
    )
    fig.savefig(out_dir / "timing_wheel.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


class _Waiting(DelayedOperation):
    def __init__(self, name, delay_ms):
        super().__init__(delay_ms)
        self.name = name

    def try_complete(self):
        return False

    def on_complete(self):
        pass

    def on_expiration(self):
        pass


def _purgatory_example():
    """The watcher lists and the timer's contents of a real purgatory holding three operations."""
    timer = SystemTimer("Produce", start_ms=0, time_ms=lambda: 0)
    purgatory = DelayedOperationPurgatory("Produce", timer, reaper_enabled=False)
    for name, delay, keys in [
        ("produce-1", 1000, ["orders-0", "orders-1"]),
        ("produce-2", 1000, ["orders-0"]),
        ("produce-3", 300, ["payments-0"]),
    ]:
        purgatory.try_complete_else_watch(_Waiting(name, delay), keys)
    rows = [
        (key, [op.name for op in watchers._operations])
        for key, watchers in purgatory._watchers_for_key.items()
    ]
    timed = []
    wheel = timer.timing_wheel
    while wheel is not None:
        for bucket in wheel.buckets:
            bucket.foreach(lambda op: timed.append((op.name, op.delay_ms)))
        wheel = wheel.overflow_wheel
    timed = [(name, f"{due} ms") for name, due in sorted(timed, key=lambda t: (t[1], t[0]))]
    timer.shutdown()
    return rows, timed


def draw_purgatory(out_dir):
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    ax.axis("off")
    ax.text(0.1, 3.9, "watcher lists (per key)", fontsize=10, weight="bold")
    ax.text(6.4, 3.9, "the timer (one entry per operation)", fontsize=10, weight="bold")
    rows, timed = _purgatory_example()
    colours = {"produce-1": "#dbe9f6", "produce-2": "#e3f1dc", "produce-3": "#fde2c8"}
    for r, (key, ops) in enumerate(rows):
        y = 3.0 - r * 1.0
        ax.text(0.1, y + 0.3, key, fontsize=9, family="monospace")
        for c, op in enumerate(ops):
            ax.add_patch(Rectangle((1.6 + c * 1.9, y), 1.7, 0.6, fc=colours[op], ec="#555555"))
            ax.text(2.45 + c * 1.9, y + 0.3, op, ha="center", va="center", fontsize=8)
    for r, (op, due) in enumerate(timed):
        y = 3.0 - r * 1.0
        ax.add_patch(Rectangle((6.6, y), 1.7, 0.6, fc=colours[op], ec="#555555"))
        ax.text(7.45, y + 0.3, op, ha="center", va="center", fontsize=8)
        ax.text(8.5, y + 0.3, f"expires at {due}", va="center", fontsize=8)
    ax.text(
        0.1,
        0.1,
        "check_and_complete(key) tries the operations of one list; the timer forces the ones\n"
        "nobody completed.  produce-1 waits on two keys: completed through orders-1, it lingers\n"
        "in orders-0's list until that key is checked or the reaper purges it.",
        fontsize=8,
    )
    fig.savefig(out_dir / "purgatory.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def _purge_example():
    """A real purgatory's watcher lists before and after the reaper purges them."""
    timer = SystemTimer("Produce", start_ms=0, time_ms=lambda: 0)
    purgatory = DelayedOperationPurgatory("Produce", timer, purge_interval=2,
                                          reaper_enabled=False)
    ops = {}
    for name, keys in [("produce-1", ["orders-0", "orders-1"]),
                       ("produce-2", ["orders-0", "orders-2"]),
                       ("produce-3", ["orders-0", "orders-3"]),
                       ("produce-4", ["orders-0"])]:
        ops[name] = _Waiting(name, 1000)
        purgatory.try_complete_else_watch(ops[name], keys)
    # Events on orders-1..3 complete produce-1..3 there; orders-0, where they also wait, is quiet.
    for name, key in (("produce-1", "orders-1"), ("produce-2", "orders-2"),
                      ("produce-3", "orders-3")):
        ops[name].force_complete()
        purgatory.check_and_complete(key)

    def lists():
        return [(key, [(op.name, op.is_completed) for op in w._operations])
                for key, w in sorted(purgatory._watchers_for_key.items())]

    before = lists()
    estimate = purgatory.estimated_total_operations() - purgatory.num_delayed()
    purgatory.advance_clock(0)  # one round of the reaper: over purge_interval, so it purges
    after = lists()
    assert purgatory.purges() == 1
    timer.shutdown()
    return before, estimate, after


def draw_purge(out_dir):
    before, estimate, after = _purge_example()
    fig, ax = plt.subplots(figsize=(10, 2.0))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 2.0)
    ax.axis("off")
    for x, title, rows in ((0.1, f"before: about {estimate} completed ones still watched\n"
                            "(> purge_interval = 2)", before),
                           (5.3, "after one advance_clock() of the reaper:\npurged", after)):
        ax.text(x, 1.45, title, fontsize=9, weight="bold")
        for r, (key, ops) in enumerate(rows):
            y = 0.75 - r * 0.8
            ax.text(x, y + 0.2, key, fontsize=8, family="monospace")
            for c, (name, done) in enumerate(ops):
                ax.add_patch(Rectangle((x + 1.0 + c * 0.95, y), 0.85, 0.45,
                                       fc="#eeeeee" if done else "#dbe9f6", ec="#555555",
                                       ls="--" if done else "-"))
                ax.text(x + 1.42 + c * 0.95, y + 0.22, name.replace("produce-", "p") +
                        (" done" if done else ""), ha="center", va="center", fontsize=7)
    ax.text(0.1, 0.05, "Dashed: completed through orders-1, -2, -3 (whose lists emptied then), "
            "still in orders-0's list,\nwhich no event checks. The reaper's purge drops them.",
            fontsize=8)
    fig.savefig(out_dir / "purge.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(out_dir):
    draw_wheels(out_dir)
    draw_purgatory(out_dir)
    draw_purge(out_dir)
