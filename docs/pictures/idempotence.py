"""Idempotence: sequence numbers given by a real TransactionManager, and what the broker does."""

import importlib.util
import pathlib

from kafkacore.accumulator import RecordAccumulator
from kafkacore.core import BufferPool
from kafkacore.transaction_manager import TransactionManager

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _numbered_batches():
    """Batches of 3, 3 and 2 records on orders-0, numbered as drain() numbers them."""
    tm = TransactionManager()
    tm.set_producer_id(4000, 0)
    acc = RecordAccumulator(
        batch_size=512, compression="none", compression_level=None, linger_ms=5,
        retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
        pool=BufferPool(1024 * 1024, 512), transaction_manager=tm,
    )
    for i in range(8):
        acc.append("orders", 0, 0, b"key-%d" % i, b"v" * 100, None, None, 1000, 0)
    batches = list(acc.batches.get(("orders", 0)).batches)
    for batch in batches:
        tm.assign_sequence(("orders", 0), batch)
    return tm, batches


def draw(out_dir):
    tm, batches = _numbered_batches()
    fig, ax = _boxes.figure(11.5, 4.4)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 4.1, f"producer id {tm.producer_id}, epoch {tm.producer_epoch}: orders-0",
            fontsize=10, weight="bold")
    for i, batch in enumerate(batches):
        last = batch.base_sequence + batch.record_count - 1
        b(ax, 0.2 + i * 2.4, 2.6, 2.1, 1.0,
          f"batch {i + 1}\n{batch.record_count} records\nbase sequence {batch.base_sequence}\n"
          f"(records {batch.base_sequence}..{last})", "compiled", 8)
    b(ax, 7.8, 2.6, 3.5, 1.0, "broker: per producer id and\npartition, the last five\nbatches "
      "(sequences, offsets)", "wire", 8)
    a(ax, 7.35, 3.1, 7.75, 3.1)
    second = batches[1]
    b(ax, 0.2, 0.4, 3.3, 1.1, f"retry of batch 2\n(same base sequence {second.base_sequence})\n"
      "its answer was lost", "python", 8)
    b(ax, 4.2, 0.4, 3.2, 1.1, "one of the last five:\nsuccess, the offsets it was\nfirst written "
      "at; not written again", "thread", 8)
    b(ax, 8.1, 0.4, 3.2, 1.1, "a sequence past the next\nexpected one (a gap):\n"
      "OUT_OF_ORDER_SEQUENCE_NUMBER", "wire", 8)
    a(ax, 3.55, 0.95, 4.15, 0.95)
    a(ax, 9.5, 2.55, 9.5, 1.55)
    fig.savefig(pathlib.Path(out_dir) / "idempotence.png", dpi=110, bbox_inches="tight")
    _boxes.plt.close(fig)
