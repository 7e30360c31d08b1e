"""The log cleaner's throughput: MB of log cleaned per second.

Writes ``--updates`` records (default 1,000,000) over ``--keys`` keys (10,000) to a compacted
``Log`` (100-byte values, 100 records a batch, 4 MiB segments), cleans it once with the
``LogCleaner``, and prints the bytes read and written, the seconds, MB/s, the records before and
after, and the load average.  Kafka's cleaner is throttled by
``log.cleaner.io.max.bytes.per.second``, whose default is unlimited (``Double.MAX_VALUE``): by
its own defaults Kafka's cleaner takes no time from its throttle, so the figure to compare is the
time at a given throttle; ``--throttle`` sets ours to show it holds.

    PYTHONPATH=$PWD python benchmarks/bench_cleaner.py [--updates N] [--keys K] [--throttle B/s]
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
    args = ap.parse_args()
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


def _one(now: int) -> bytes:
    """One record of a key of its own, so that the last update leaves the active segment."""
    b = MemoryRecordsBuilder(1024)
    b.append(now, b"end", b"end")
    return bytes(b.build())


if __name__ == "__main__":
    main()
