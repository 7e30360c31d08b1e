"""The main job (``make demo``): produce to an embedded local broker and check every record arrived.

1. start a local tansu broker on a free loopback port (:class:`kafkacore.testing.localbroker.LocalBroker`);
2. create a topic and run ``kafkacore-perf`` against it (numbered 100-byte records);
3. read the topic back with confluent-kafka's consumer (librdkafka: a client we did not write),
   every partition from offset 0, and check that each record arrived exactly once.
"""

from __future__ import annotations

import argparse
import sys

from pipeline import read_back  # examples/pipeline.py, next to this file

from kafkacore import admin, perf
from kafkacore.testing import LocalBroker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/demo.py", description=__doc__.splitlines()[0])
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
        records = read_back(broker.bootstrap, args.topic, args.partitions, args.num_records)
    values = [value for _partition, _offset, _key, value in records]
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
