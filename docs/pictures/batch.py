"""ProducerBatch: records, thunks (our futures), one shared result; and what split() re-points."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _batch(out_dir):
    fig, ax = _boxes.figure(11.5, 7.0)
    b, a = _boxes.box, _boxes.arrow

    # The caller's side: each send() appends and gets a future back.
    ax.text(0.2, 6.6, "caller's threads", fontsize=10, weight="bold")
    b(ax, 0.2, 5.3, 2.4, 0.7, "try_append(...)\n(deque lock held)\nreturns f3", "python", 8)
    b(ax, 0.2, 2.3, 2.4, 0.8, "f3.result(timeout)\nwaits on the latch,\nGIL released", "thread", 8)

    # The batch.
    ax.add_patch(
        _boxes.FancyBboxPatch(
            (3.1, 0.5), 4.9, 6.1, boxstyle="round,pad=0.05", fc="white", ec="#555555", lw=1.2
        )
    )
    ax.text(3.25, 6.3, "ProducerBatch  orders-0", fontsize=10, weight="bold", family="monospace")
    b(
        ax,
        3.3,
        5.3,
        4.5,
        0.7,
        "MemoryRecordsBuilder\n[header 61 B | r0 | r1 | r2 | r3 ]",
        "compiled",
        8,
    )
    a(ax, 2.6, 5.65, 3.3, 5.65)
    ax.text(3.3, 4.95, "thunks: the futures, in append order", fontsize=8)
    for i in range(4):
        b(ax, 3.3 + i * 1.15, 3.7, 1.0, 1.0, f"f{i}\nrel={i}\nts, sizes\ncallback", "compiled", 7)
        a(ax, 3.8 + i * 1.15, 3.7, 3.8 + i * 1.15, 3.15)
    b(
        ax,
        3.3,
        2.3,
        4.5,
        0.8,
        "ProduceRequestResult (one per batch)\nbase_offset, log_append_time, exception,\nstate, latch",
        "compiled",
        8,
    )
    b(
        ax,
        3.3,
        1.4,
        4.5,
        0.55,
        "final state: None -> SUCCEEDED\ncompare-and-set, tiny lock",
        "compiled",
        8,
    )
    b(ax, 3.3, 0.65, 4.5, 0.45, "record_count, created_ms, attempts, ...", "python", 8)
    a(ax, 2.6, 2.7, 3.3, 2.7)

    # The Sender completing it.
    ax.text(8.6, 4.1, "Sender thread", fontsize=10, weight="bold")
    b(
        ax,
        8.6,
        1.4,
        2.7,
        2.4,
        "done(42, -1, None)\n\n1 CAS the final state\n2 set the answer\n3 callbacks, in order\n"
        "4 open the latch\n5 done-callbacks",
        "thread",
        8,
    )
    a(ax, 8.6, 2.7, 7.8, 2.7)
    a(ax, 8.6, 1.7, 7.8, 1.7)
    _boxes.legend(ax, 0.2, 0.0)
    _boxes.save(fig, pathlib.Path(out_dir) / "batch.png")


def _split(out_dir):
    fig, ax = _boxes.figure(11.5, 5.0)
    b, a = _boxes.box, _boxes.arrow
    b(
        ax,
        0.2,
        4.0,
        11.1,
        0.7,
        "original batch, 6 records, too large for the broker: final state SPLIT\n"
        "it never completes these records; its old result opens its latch in state SPLIT",
        "compiled",
        8,
    )
    ax.text(
        0.2,
        3.55,
        "the user's futures (and their callbacks) move; they are the same objects",
        fontsize=8,
    )
    for n, label in enumerate("ABC"):
        x = 0.2 + n * 3.8
        b(
            ax,
            x,
            0.5,
            3.5,
            1.0,
            f"new batch {label}, closed for appends\nits own result",
            "compiled",
            8,
        )
        for rel in range(2):
            i = 2 * n + rel
            fx = x + 0.4 + rel * 1.6
            b(ax, fx, 2.6, 1.0, 0.6, f"f{i}", "compiled", 8)
            a(ax, fx + 0.5, 2.6, fx + 0.5, 1.5)
            ax.text(fx + 0.55, 2.0, f"rel={rel}", fontsize=7)
    ax.text(
        0.2,
        0.05,
        "split() re-points every future BEFORE it opens the old latch, so a thread "
        "already waiting wakes up and follows its future to the new result",
        fontsize=8,
    )
    _boxes.save(fig, pathlib.Path(out_dir) / "batch_split.png")


def draw(out_dir):
    _batch(out_dir)
    _split(out_dir)


if __name__ == "__main__":
    draw(".")
