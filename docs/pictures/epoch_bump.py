"""The epoch bump (KIP-360), drawn from a real TransactionManager and accumulator run through
the frozen-broker story: two batches numbered, the first expires, the second is acknowledged...
or not, and the partition starts over under epoch 1."""

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

TP = ("orders", 0)


def _story():
    """Run the rules on real batches; return what each step left behind, for the boxes."""
    tm = TransactionManager()
    tm.set_producer_id(4000, 0)
    acc = RecordAccumulator(
        batch_size=320, compression="none", compression_level=None, linger_ms=0,
        retry_backoff_ms=0, retry_backoff_max_ms=0, delivery_timeout_ms=120_000,
        pool=BufferPool(1 << 20, 320), transaction_manager=tm,
    )
    for i in range(6):
        acc.append(TP[0], TP[1], 0, None, b"v%d" % i + b"." * 98, None, None, 1000, 0)
    queue = acc.batches.get(TP).batches
    a, b, c = list(queue)

    def drain(batch):
        if batch.base_sequence < 0:
            tm.assign_sequence(TP, batch)
        batch.close()
        queue.remove(batch)
        tm.add_in_flight(TP, batch)

    drain(a)
    drain(b)
    steps = [f"epoch {a.producer_epoch}, in flight:\nbatch A seq {a.base_sequence}-{a.last_sequence}"
             f"\nbatch B seq {b.base_sequence}-{b.last_sequence}"]
    tm.remove_in_flight(TP, a)
    tm.mark_unresolved(TP, a)
    tm.remove_in_flight(TP, b)
    tm.mark_unresolved(TP, b)
    steps.append("broker frozen:\nA and B expire\nwritten? unknown:\npartition unresolved")
    held = tm.should_stop_drain(TP, c)
    steps.append(f"new batch C held: {held}\nnothing in flight, nothing\nacknowledged: a gap"
                 "\n-> start over")
    idle, needs_bump = tm.partitions_to_rewrite()
    assert idle == [TP] and needs_bump
    assert tm.bump_idempotent_epoch()  # the producer raises its own epoch
    acc.rewrite_sequences(TP)
    drain(c)
    steps.append(f"epoch raised by the\nproducer -> {tm.producer_epoch}\n"
                 f"batch C: epoch {c.producer_epoch},\nseq {c.base_sequence}-{c.last_sequence}")
    return steps


def draw(out_dir):
    steps = _story()
    fig, ax = _boxes.figure(12.0, 2.4)
    kinds = ["python", "wire", "thread", "compiled"]
    for i, (text, kind) in enumerate(zip(steps, kinds, strict=True)):
        _boxes.box(ax, 0.2 + i * 3.0, 0.7, 2.7, 1.5, text, kind, 7)
        if i:
            _boxes.arrow(ax, i * 3.0 - 0.1, 1.45, i * 3.0 + 0.2, 1.45)
    ax.text(0.2, 0.1, "the broker takes sequence 0 of a higher epoch whatever it held before; "
            "A and B may or may not be in the log (at most once),\nnever after C: a batch of "
            "epoch 0 the broker reads late is refused (INVALID_PRODUCER_EPOCH)", fontsize=8)
    _boxes.save(fig, pathlib.Path(out_dir) / "epoch_bump.png")
