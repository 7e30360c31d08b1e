"""The RecordAccumulator, drawn from a real one: per-partition queues of batches, one muted."""

import importlib.util
import pathlib

from kafkacore.accumulator import RecordAccumulator
from kafkacore.core import BufferPool

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

BATCH_SIZE = 512


def _filled_accumulator():
    """A small accumulator after some appends: 3, 1 and 2 batches on orders-0, -1 and -2."""
    acc = RecordAccumulator(
        batch_size=BATCH_SIZE, compression="none", compression_level=None, linger_ms=5,
        retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
        pool=BufferPool(4 * 1024 * 1024, BATCH_SIZE),
    )
    for partition, records in ((0, 8), (1, 3), (2, 5)):
        for i in range(records):
            acc.append("orders", partition, 0, b"key-%d" % i, b"v" * 100, None, None, 1000, 0)
    # orders-2 has a batch in flight with max.in.flight.requests.per.connection = 1.
    acc.mute(("orders", 2))
    return acc


def draw(out_dir):
    acc = _filled_accumulator()
    fig, ax = _boxes.figure(11.5, 5.6)
    b = _boxes.box
    ax.text(0.2, 5.25, "RecordAccumulator.batches  (CopyOnWriteMap: reads take no lock)",
            fontsize=10, weight="bold")
    ax.text(4.45, 4.9, "oldest: drain() takes it", fontsize=8, ha="center", color="#333333")
    ax.text(9.65, 4.9, "newest: append() fills it", fontsize=8, ha="center", color="#333333")
    queues = sorted(acc.batches.items())
    for row, (tp, queue) in enumerate(queues):
        y = 3.8 - row * 1.45
        muted = tp in acc._muted
        label = f"{tp[0]}-{tp[1]}\nPartitionQueue\nlock + deque"
        b(ax, 0.2, y, 2.6, 0.95, label + ("\nMUTED" if muted else ""), "wire" if muted else "python", 8)
        batches = list(queue.batches)
        for i, batch in enumerate(batches):
            x = 3.3 + i * 2.6
            last = i == len(batches) - 1
            state = "open for appends" if last else ("full, oldest" if i == 0 else "full")
            text = (f"ProducerBatch\n{batch.record_count} records\n"
                    f"{batch.estimated_size_in_bytes()} of {BATCH_SIZE} B\n{state}")
            b(ax, x, y, 2.3, 0.95, text, "compiled", 8)
            if i:
                _boxes.arrow(ax, x - 0.3, y + 0.47, x - 0.02, y + 0.47)
        _boxes.arrow(ax, 2.85, y + 0.47, 3.25, y + 0.47)
        if muted:
            ax.text(3.3 + len(batches) * 2.6, y + 0.3,
                    "skipped by ready() and drain()\nuntil its in-flight batch\nis answered (unmute)",
                    fontsize=8, color="#9b2c2c")
    fig.savefig(pathlib.Path(out_dir) / "accumulator.png", dpi=110, bbox_inches="tight")
    _boxes.plt.close(fig)
