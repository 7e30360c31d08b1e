"""The log cleaner's throughput: MB of log cleaned per second.

Writes ``--updates`` records (default 1,000,000) over ``--keys`` keys (10,000) to a compacted
``Log`` (100-byte values, 100 records a batch, 4 MiB segments), cleans it once with the
``LogCleaner``, and prints the bytes read and written, the seconds, MB/s, the records before and
after, and the load average.  Kafka's cleaner is throttled by
``log.cleaner.io.max.bytes.per.second``, whose default is unlimited (``Double.MAX_VALUE``): by
its own defaults Kafka's cleaner takes no time from its throttle, so the figure to compare is the
time at a given throttle; ``--throttle`` sets ours to show it holds.

    PYTHONPATH=$PWD python benchmarks/bench_cleaner.py [--updates N] [--keys K] [--throttle B/s]

``--through-broker`` runs the same updates through an in-process broker instead: our producer
writes them to a compacted topic (1 MiB segments) while a confluent-kafka consumer reads it from
the start; then, once the cleaner has run, a second consumer reads the topic from the start and
must find every key with its latest value; the records left are counted.

``--commits N`` measures instead ``__consumer_offsets`` through N offset commits of one
confluent-kafka consumer (10 partitions, so 10 keys) on an in-process broker, with 256 KiB
segments: the size of the offsets partition's log, written and as the cleaner leaves it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.cleaner_config import DOUBLE_MAX, CleanerConfig
from kafkacore.broker.log.log_cleaner import LogCleaner
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--throttle", type=float, default=DOUBLE_MAX)
    ap.add_argument("--commits", type=int, default=0)
    ap.add_argument("--through-broker", action="store_true")
    args = ap.parse_args()
    if args.commits:
        offsets_topic(args.commits)
        return
    if args.through_broker:
        through_broker(args.updates, args.keys)
        return
    root = Path(tempfile.mkdtemp())
    try:
        config = LogConfig.from_properties({"cleanup.policy": "compact",
                                            "segment.bytes": str(4 << 20)})
        lg = Log(root / "bench-0", config, topic="bench", partition=0)
        value = b"v" * 100
        now = int(time.time() * 1000)
        for first in range(0, args.updates, 100):
            b = MemoryRecordsBuilder(32 * 1024)
            for i in range(first, min(first + 100, args.updates)):
                b.append(now, b"key-%d" % (i % args.keys), value)
            lg.append_as_leader(bytes(b.build()))
        lg._roll(lg.log_end_offset)  # the last updates leave the active segment
        lg.append_as_leader(_one(now))
        before = lg.size_in_bytes
        cleaner = LogCleaner(CleanerConfig(max_io_bytes_per_second=args.throttle), [root],
                             lambda: {("bench", 0): lg})
        t0, cpu0 = time.monotonic(), time.process_time()
        stats = cleaner.clean_now()[0]
        elapsed, cpu = time.monotonic() - t0, time.process_time() - cpu0
        records = 0
        offset = 0
        while offset < lg.log_end_offset:
            data = lg.read(offset, 1 << 20).records
            for batch in iter_batches(data):
                records += batch.record_count
                offset = batch.last_offset + 1
        mb = before / 1e6  # the log cleaned (each byte is read twice: map, then rewrite)
        print(f"log: {args.updates} updates of {args.keys} keys, {before / 1e6:.1f} MB in "
              f"{len(lg.segments)} segments after the clean")
        print(f"cleaned: {mb:.1f} MB of log ({stats.bytes_read / 1e6:.1f} MB read), "
              f"{stats.bytes_written / 1e6:.2f} MB written in "
              f"{elapsed:.2f} s: {mb / elapsed:.1f} MB/s; {cpu:.2f} s of CPU: "
              f"{mb / cpu:.1f} MB per CPU second (the machine's load does not change this one)")
        print(f"records: {args.updates} -> {records} ({lg.size_in_bytes / 1e6:.2f} MB)")
        if args.throttle < DOUBLE_MAX:
            print(f"throttle {args.throttle / 1e6:.1f} MB/s: the reads and writes "
                  f"({(stats.bytes_read + stats.bytes_written) / 1e6:.1f} MB) need at least "
                  f"{(stats.bytes_read + stats.bytes_written) / args.throttle:.2f} s")
        else:
            print("Kafka's default throttle (log.cleaner.io.max.bytes.per.second = "
                  "Double.MAX_VALUE) allows this clean in 0 s: only the CPU bounds it")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: ``offsets.topic.segment.bytes`` of the --commits run (Kafka's 100 MiB would not roll before
#: a few hundred thousand commits, and the active segment is never cleaned)
SEGMENT_BYTES = 256 * 1024


def offsets_topic(commits: int) -> None:
    import confluent_kafka as ck

    from kafkacore.admin import create_topics
    from kafkacore.broker import Broker

    with Broker({"num.partitions": "10", "offsets.topic.num.partitions": "1",
                 "offsets.topic.segment.bytes": str(SEGMENT_BYTES),
                 "log.cleaner.backoff.ms": "1000"}) as broker:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, {"bench": 10})
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-group",
                                "enable.auto.commit": False})
        t0 = time.monotonic()
        for n in range(commits):
            tps = [ck.TopicPartition("bench", n % 10, n)]
            consumer.commit(offsets=tps, asynchronous=n % 1000 != 999)
        elapsed = time.monotonic() - t0
        lg = broker.log_manager.get_log("__consumer_offsets", 0)
        written = lg.log_end_offset
        print(f"{commits} commits in {elapsed:.1f} s: __consumer_offsets holds offsets 0 to "
              f"{written - 1}, {lg.size_in_bytes / 1e6:.1f} MB in {len(lg.segments)} segments")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and lg.size_in_bytes > 3 * SEGMENT_BYTES:
            time.sleep(0.5)
        active = lg.active_segment.base_offset
        cleaned = sum(1 for r in _records(lg) if r.offset < active)
        print(f"after the cleaner: {lg.size_in_bytes / 1e6:.2f} MB in {len(lg.segments)} "
              f"segments; {cleaned} records below the active segment (which is never cleaned)")
        committed = consumer.committed([ck.TopicPartition("bench", p) for p in range(10)], 10)
        assert all(tp.offset >= 0 for tp in committed), committed
        consumer.close()
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def through_broker(updates: int, keys: int) -> None:
    import threading

    import confluent_kafka as ck

    from kafkacore import KafkaProducer
    from kafkacore.admin import create_topics
    from kafkacore.broker import Broker

    def read_all(group: str, stop: threading.Event | None = None) -> dict[bytes, bytes]:
        """Every key's last value, reading from the start to the end of the topic."""
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                "enable.partition.eof": True})
        consumer.subscribe(["compacted"])
        latest: dict[bytes, bytes] = {}
        deadline = time.monotonic() + 600
        try:
            while time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == ck.KafkaError._PARTITION_EOF and (
                            stop is None or stop.is_set()):
                        return latest
                    continue
                latest[msg.key()] = msg.value()
            raise TimeoutError("the consumer did not reach the end of the topic in 600 s")
        finally:
            consumer.close()

    with Broker({"log.cleaner.backoff.ms": "1000"}) as broker:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, {"compacted": 1}, configs={
            "cleanup.policy": "compact", "segment.bytes": str(1 << 20)})
        written = threading.Event()
        during: dict[bytes, bytes] = {}
        reader = threading.Thread(target=lambda: during.update(read_all("during", written)))
        reader.start()
        expected = {}
        t0 = time.monotonic()
        with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
            for i in range(updates):
                key = b"key-%d" % (i % keys)
                value = b"%012d" % i + b"v" * 88
                producer.send("compacted", value, key=key)
                expected[key] = value
            producer.flush()
        written.set()
        elapsed = time.monotonic() - t0
        lg = broker.log_manager.get_log("compacted", 0)
        print(f"{updates} updates of {keys} keys written in {elapsed:.1f} s: "
              f"{lg.size_in_bytes / 1e6:.1f} MB in {len(lg.segments)} segments")
        def below_active() -> int:
            return sum(1 for r in _records(lg) if r.offset < lg.active_segment.base_offset)

        deadline = time.monotonic() + 300  # the cleaner has cleaned all it may: a key once
        while time.monotonic() < deadline and below_active() > keys:
            time.sleep(1.0)
        reader.join(600)
        assert during == expected, "the consumer reading while the cleaner ran missed a value"
        after = read_all("after")
        assert after == expected, "a key's latest value is missing after the clean"
        records = sum(1 for _ in _records(lg))
        active = sum(1 for r in _records(lg) if r.offset >= lg.active_segment.base_offset)
        print(f"after the cleaner: {records} records ({lg.size_in_bytes / 1e6:.2f} MB, "
              f"{len(lg.segments)} segments; {active} of them in the active segment, which is "
              f"never cleaned); both consumers found all {keys} keys at their latest values")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _records(lg: Log):
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 20).records
        if not data:
            return
        for batch in iter_batches(data):
            yield from batch.records
            offset = batch.last_offset + 1


def _one(now: int) -> bytes:
    """One record of a key of its own, so that the last update leaves the active segment."""
    b = MemoryRecordsBuilder(1024)
    b.append(now, b"end", b"end")
    return bytes(b.build())


if __name__ == "__main__":
    main()
