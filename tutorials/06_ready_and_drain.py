"""Ready and drain: how the Sender decides what to send, on a real accumulator, without a broker.

Run it from the repository's root:

    python tutorials/06_ready_and_drain.py

Two leaders, four partitions, ``batch.size`` = 512 bytes and ``linger.ms`` = 100. We append,
then ask ``ready`` (which leaders have something sendable?) and ``drain`` (which batches go in
each leader's request?) at chosen instants, the way the Sender does on every turn of its loop.
"""

from kafkacore.accumulator import ReadyCheckResult, RecordAccumulator
from kafkacore.core import BufferPool, ProducerBatch
from kafkacore.metadata import Cluster, Node, PartitionInfo

# --- start
BATCH_SIZE, LINGER_MS, MAX_REQUEST = 512, 100, 1024
acc = RecordAccumulator(
    batch_size=BATCH_SIZE, compression="none", compression_level=None, linger_ms=LINGER_MS,
    retry_backoff_ms=100, retry_backoff_max_ms=1000, delivery_timeout_ms=120_000,
    pool=BufferPool(1024 * 1024, BATCH_SIZE),
)
# t-0 and t-2 are led by broker 1, t-1 and t-3 by broker 2.
cluster = Cluster([Node(1, "127.0.0.1", 9092), Node(2, "127.0.0.1", 9093)],
                  [PartitionInfo("t", p, 1 if p % 2 == 0 else 2, 0) for p in range(4)])


def append(partition: int, records: int, now_ms: int) -> None:
    for i in range(records):
        acc.append("t", partition, now_ms, b"k%d" % i, b"v" * 100, None, None, 1000, now_ms)


append(0, 7, now_ms=0)   # t-0: a full batch of 4 records and an open one of 3
append(1, 1, now_ms=0)   # t-1: one record, not full: it must linger
append(2, 2, now_ms=5)   # t-2: two records, a little later


def step(now_ms: int) -> tuple[ReadyCheckResult, dict[int, list[ProducerBatch]]]:
    result = acc.ready(cluster, now_ms)
    drained = acc.drain(cluster, sorted(result.ready_nodes), MAX_REQUEST, now_ms)
    print(f"t={now_ms:>3} ms: ready leaders {sorted(result.ready_nodes)}, "
          f"look again in {result.next_ready_check_delay_ms} ms")
    for node, batches in sorted(drained.items()):
        print(f"          to broker {node}: "
              + ", ".join(f"t-{b.partition} ({b.record_count} records)" for b in batches))
    print()
    return result, drained
# --- end


# At 10 ms only broker 1 is ready: t-0's first batch is full (4 records fill 512 bytes).  Drain
# then takes the first batch of *every* partition that broker leads, lingering or not: the request
# goes anyway, so t-2's young batch rides along.  Broker 2's t-1 keeps lingering.
result, drained = step(10)
assert result.ready_nodes == {1}
assert [(b.partition, b.record_count) for b in drained[1]] == [(0, 4), (2, 2)]
# The earliest a lingering batch becomes sendable: t-0's open one and t-1's, both from 0 ms.
assert result.next_ready_check_delay_ms == 90

# At 100 ms t-0's second batch and t-1's have lingered long enough: both leaders are ready.
result, drained = step(100)
assert result.ready_nodes == {1, 2}
assert [(b.partition, b.record_count) for b in drained[1]] == [(0, 3)]
assert [(b.partition, b.record_count) for b in drained[2]] == [(1, 1)]
assert not acc.has_undrained()
print("every batch drained once, oldest first, each partition's in order")
