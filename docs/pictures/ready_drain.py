"""ready() and drain(), drawn from a real accumulator at t=10 ms (the state of tutorial 06)."""

import importlib.util
import pathlib

from kafkacore.accumulator import RecordAccumulator
from kafkacore.core import BufferPool
from kafkacore.metadata import Cluster, Node, PartitionInfo

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

BATCH_SIZE, LINGER_MS, MAX_REQUEST, NOW = 512, 100, 1024, 10


def _state():
    """The queues before, and what ready() and drain() answer at NOW."""
    acc = RecordAccumulator(
        batch_size=BATCH_SIZE, compression="none", compression_level=None, linger_ms=LINGER_MS,
        retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
        pool=BufferPool(1024 * 1024, BATCH_SIZE),
    )
    cluster = Cluster([Node(1, "127.0.0.1", 9092), Node(2, "127.0.0.1", 9093)],
                      [PartitionInfo("t", p, 1 if p % 2 == 0 else 2, 0) for p in range(4)])
    for partition, records, at in ((0, 7, 0), (1, 1, 0), (2, 2, 5)):
        for i in range(records):
            acc.append("t", partition, at, b"k%d" % i, b"v" * 100, None, None, 1000, at)
    before = {tp[1]: [b.record_count for b in queue.batches]
              for tp, queue in sorted(acc.batches.items())}
    result = acc.ready(cluster, NOW)
    drained = acc.drain(cluster, sorted(result.ready_nodes), MAX_REQUEST, NOW)
    taken = {node: [(b.partition, b.record_count) for b in batches]
             for node, batches in drained.items()}
    return before, result, taken


def draw(out_dir):
    before, result, taken = _state()
    fig, ax = _boxes.figure(12, 5.4)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 5.1, f"at t={NOW} ms: linger.ms={LINGER_MS}, batch.size={BATCH_SIZE}, "
            f"max.request.size={MAX_REQUEST}", fontsize=10, weight="bold")
    ax.text(0.2, 4.6, "queues (oldest batch left)", fontsize=9)
    ax.text(6.6, 4.6, "ready(): leaders", fontsize=9)
    ax.text(8.9, 4.6, "drain(): one request per ready leader", fontsize=9)
    drained = {p for batches in taken.values() for p, _ in batches}
    for row, (partition, counts) in enumerate(before.items()):
        y = 3.8 - row * 1.0
        leader = 1 if partition % 2 == 0 else 2
        ax.text(0.2, y + 0.25, f"t-{partition}\nleader {leader}", fontsize=8, family="monospace")
        for i, count in enumerate(counts):
            full = i < len(counts) - 1
            kind = "compiled" if (i == 0 and partition in drained) else "python"
            b(ax, 1.5 + i * 2.2, y, 2.0, 0.6, f"{count} records\n"
              + ("full" if full else "open, lingering"), kind, 7)
    for i, node in enumerate((1, 2)):
        y = 3.3 - i * 2.0
        ready = node in result.ready_nodes
        b(ax, 6.6, y, 1.9, 0.8, f"broker {node}\n" + ("READY" if ready else "not yet"),
          "thread" if ready else "wire", 8)
        if ready:
            parts = ", ".join(f"t-{p}: {n} rec." for p, n in taken[node])
            b(ax, 8.9, y, 2.9, 0.8, f"ProduceRequest\n{parts}", "compiled", 7)
            a(ax, 8.5, y + 0.4, 8.9, y + 0.4)
    ax.text(6.6, 0.55, f"look again in {result.next_ready_check_delay_ms} ms "
            "(when a lingering batch will have waited linger.ms)", fontsize=8, color="#333333")
    ax.text(0.2, 0.0, "orange: the batches drain() took. A full batch on t-0 makes broker 1 "
            "ready; drain() then takes the first batch\nof every partition broker 1 leads, "
            "t-2's young one too. Broker 2's only batch keeps lingering.", fontsize=8)
    _boxes.save(fig, pathlib.Path(out_dir) / "ready_drain.png")
