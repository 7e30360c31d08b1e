"""The read path's speed: PartitionReader.read against confluent-kafka's Consumer, same rows.

    python benchmarks/bench_read.py [--records 1000000] [--size 100] [--codec none] [--rounds 3]

Writes ``records`` records of ``size`` bytes (keys null) into one partition of our broker (a
child process, ``LocalBroker(kind="kafkacore")``), then reads them all, in turns, ``rounds``
times each way:

* ``kafkacore``: ``PartitionReader.read`` over the whole range, counting the Arrow rows (the
  Spark source's work: the rows are ready as columns);
* ``confluent-kafka``: ``Consumer`` assigned the partition at offset 0, ``consume(10000)`` until
  it has every record, touching each message's value (librdkafka decodes in its own threads;
  Python gets one ``Message`` object per record), with the prefetch settings that made it
  fastest here (``queued.min.messages`` 1M, 10 MiB per partition fetch, 10 ms fetch wait).

Prints, per reader, the best round's rows/s and the CPU time of this process per record (both
readers' threads included; the broker is another process and is not counted), the ratio, and
the load average beside them: the machine is shared, so read the ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import pyarrow as pa

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.consumer import PartitionReader
from kafkacore.testing import LocalBroker


def produce(bootstrap: str, topic: str, records: int, size: int, codec: str) -> None:
    value = pa.array([os.urandom(size // 2).hex().encode()[:size]] * 10_000, pa.binary())
    with KafkaProducer({"bootstrap.servers": bootstrap, "compression.type": codec,
                        "linger.ms": 20, "batch.size": 256 * 1024}) as producer:
        sent = 0
        while sent < records:
            n = min(10_000, records - sent)
            producer.send_batch(topic, value.slice(0, n), partitions=[0] * n)
            sent += n
        producer.flush()


def read_kafkacore(bootstrap: str, topic: str, records: int) -> int:
    with PartitionReader({"bootstrap.servers": bootstrap}) as reader:
        return sum(batch.num_rows for batch in reader.read(topic, 0, 0, records))


def read_confluent(bootstrap: str, topic: str, records: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    # Tuned for this read (the best of the settings tried): librdkafka's defaults prefetch
    # only 100000 messages and read at a third of this speed.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-read",
                         "enable.auto.commit": False, "queued.min.messages": 1_000_000,
                         "fetch.wait.max.ms": 10, "max.partition.fetch.bytes": 10 << 20})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = 0
        deadline = time.monotonic() + 600
        while got < records and time.monotonic() < deadline:
            for m in consumer.consume(10_000, timeout=1.0):
                if m.error():
                    raise RuntimeError(str(m.error()))
                m.value()
                got += 1
        return got
    finally:
        consumer.close()


def measure(read, bootstrap: str, topic: str, records: int) -> tuple[float, float]:
    """(rows per second, CPU µs per record) of one full read."""
    wall, cpu = time.perf_counter(), time.process_time()
    got = read(bootstrap, topic, records)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if got != records:
        raise AssertionError(f"{read.__name__} read {got} of {records} records")
    return records / wall, cpu / records * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--codec", default="none")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logs, \
            LocalBroker(kind="kafkacore", log_dirs=logs) as broker:
        topic = "bench-read"
        create_topics(broker.bootstrap, {topic: 1})
        t0 = time.perf_counter()
        produce(broker.bootstrap, topic, args.records, args.size, args.codec)
        print(f"wrote {args.records} records of {args.size} bytes ({args.codec}) in"
              f" {time.perf_counter() - t0:.1f} s")
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.rounds):
            for name, read in (("kafkacore", read_kafkacore), ("confluent-kafka", read_confluent)):
                rate, cpu = measure(read, broker.bootstrap, topic, args.records)
                print(f"  {name:16s} {rate:12,.0f} rows/s  {cpu:6.3f} µs CPU/record")
                if name not in best or rate > best[name][0]:
                    best[name] = (rate, cpu)
        print(f"best of {args.rounds} (load average {os.getloadavg()[0]:.2f}):")
        for name, (rate, cpu) in best.items():
            print(f"  {name:16s} {rate:12,.0f} rows/s  {cpu:6.3f} µs CPU/record")
        ours, theirs = best["kafkacore"], best["confluent-kafka"]
        print(f"  kafkacore / confluent-kafka: {ours[0] / theirs[0]:.2f}x the rows/s,"
              f" {ours[1] / theirs[1]:.2f}x the CPU per record")


if __name__ == "__main__":
    main()
