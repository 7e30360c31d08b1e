"""The main job (``make demo``): produce to an embedded local broker and check every record arrived.

1. start a local tansu broker on a free loopback port (:class:`kafkacore.localbroker.LocalBroker`);
2. create a topic and run ``kafkacore-perf`` against it (numbered 100-byte records);
3. read the topic back with confluent-kafka's consumer (librdkafka: a client we did not write),
   every partition from offset 0, and check that each record arrived exactly once.
"""

from __future__ import annotations

import argparse
import sys
import time

from kafkacore import admin, perf
from kafkacore.localbroker import LocalBroker


def read_back(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 120):
    """Every value in ``topic``, read with confluent-kafka from offset 0 of each partition."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkacore-demo-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(10000, timeout=1.0):
                if message.error():
                    if message.error().code() == -191:  # _PARTITION_EOF
                        at_end.add(message.partition())
                        continue
                    raise RuntimeError(f"consumer error: {message.error()}")
                at_end.discard(message.partition())
                values.append(message.value())
            if len(at_end) == partitions and len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkacore.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--num-records", type=int, default=500_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--topic", default="kafkacore-demo")
    args = parser.parse_args(argv)

    with LocalBroker() as broker:
        print(f"local broker (tansu) listening on {broker.bootstrap}")
        admin.create_topics(broker.bootstrap, {args.topic: args.partitions})
        print(
            f"producing {args.num_records} records of {args.record_size} bytes to "
            f"{args.topic!r} ({args.partitions} partitions)"
        )
        summary = perf.run(
            args.topic,
            args.num_records,
            args.record_size,
            -1,
            {"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 1 << 20},
        )
        print("reading the topic back with confluent-kafka ...")
        values = read_back(broker.bootstrap, args.topic, args.partitions, args.num_records)
    numbers = [perf.record_number(v) for v in values]
    missing = args.num_records - len(set(numbers))
    duplicates = len(numbers) - len(set(numbers))
    wrong = sum(1 for v in values if len(v) != args.record_size)
    ok = summary["errors"] == 0 and missing == 0 and duplicates == 0 and wrong == 0
    print(
        f"read back {len(values)} records: {missing} missing, {duplicates} duplicated, "
        f"{wrong} of the wrong size"
    )
    print("every record arrived exactly once" if ok else "CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
