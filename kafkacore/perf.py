"""kafkacore-perf: Kafka's ``kafka-producer-perf-test``, for kafkacore.

    kafkacore-perf --topic T --num-records N --record-size S --throughput -1 \\
        --producer-props bootstrap.servers=127.0.0.1:9092 linger.ms=5

It prints what the Java tool prints — a line every five seconds, then the summary with records/s,
MB/s, average and maximum latency and the 50th, 95th, 99th and 99.9th percentiles — with a
progress bar on a terminal.  Each record's payload starts with its number, so a reader can check
afterwards that every record arrived exactly once (``make demo`` does).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass, field

from kafkacore.producer import KafkaProducer

REPORT_INTERVAL_S = 5.0


def payload(i: int, size: int) -> bytes:
    """Record ``i``'s value: its number in decimal, padded with dots to ``size`` bytes."""
    head = b"%d|" % i
    if len(head) > size:
        raise ValueError(f"--record-size {size} is too small to number {i} records")
    return head + b"." * (size - len(head))


def record_number(value: bytes) -> int:
    """The number ``payload`` wrote at the front of a value."""
    return int(value[: value.index(b"|")])


@dataclass
class Stats:
    """Latencies and counts, kept as the Java tool keeps them (a sample of latencies)."""

    num_records: int
    record_size: int
    start: float = field(default_factory=time.monotonic)
    acked: int = 0
    errors: int = 0
    first_error: BaseException | None = None
    latencies_ms: list = field(default_factory=list)
    window_start: float = field(default_factory=time.monotonic)
    window_count: int = 0
    window_latency: float = 0.0
    window_max: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, latency_ms: float, exception) -> None:
        with self.lock:
            if exception is not None:
                self.errors += 1
                if self.first_error is None:
                    self.first_error = exception
                return
            self.acked += 1
            self.latencies_ms.append(latency_ms)
            self.window_count += 1
            self.window_latency += latency_ms
            self.window_max = max(self.window_max, latency_ms)

    def window_line(self, now: float) -> str:
        with self.lock:
            elapsed = max(now - self.window_start, 1e-9)
            rate = self.window_count / elapsed
            avg = self.window_latency / self.window_count if self.window_count else 0.0
            line = (
                f"{self.window_count} records sent, {rate:.1f} records/sec "
                f"({rate * self.record_size / 1024 / 1024:.2f} MB/sec), {avg:.1f} ms avg latency, "
                f"{self.window_max:.1f} ms max latency."
            )
            self.window_start, self.window_count = now, 0
            self.window_latency, self.window_max = 0.0, 0.0
            return line

    def summary(self) -> dict:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        lat = sorted(self.latencies_ms)

        def pct(p: float) -> float:
            return lat[min(int(p * len(lat)), len(lat) - 1)] if lat else 0.0

        rate = self.acked / elapsed
        return {
            "records": self.acked,
            "errors": self.errors,
            "seconds": elapsed,
            "records_per_sec": rate,
            "mb_per_sec": rate * self.record_size / 1024 / 1024,
            "avg_latency_ms": sum(lat) / len(lat) if lat else 0.0,
            "max_latency_ms": lat[-1] if lat else 0.0,
            "p50_ms": pct(0.50),
            "p95_ms": pct(0.95),
            "p99_ms": pct(0.99),
            "p999_ms": pct(0.999),
        }


def summary_line(s: dict) -> str:
    return (
        f"{s['records']} records sent, {s['records_per_sec']:.1f} records/sec "
        f"({s['mb_per_sec']:.2f} MB/sec), {s['avg_latency_ms']:.2f} ms avg latency, "
        f"{s['max_latency_ms']:.2f} ms max latency, {s['p50_ms']:.0f} ms 50th, "
        f"{s['p95_ms']:.0f} ms 95th, {s['p99_ms']:.0f} ms 99th, {s['p999_ms']:.0f} ms 99.9th."
    )


def progress_bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def parse_props(pairs: list[str]) -> dict[str, str]:
    props = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"kafkacore-perf: --producer-props wants key=value, got {pair!r}")
        props[name.strip()] = value.strip()
    return props


def run(
    topic: str,
    num_records: int,
    record_size: int,
    throughput: float,
    props: dict,
    out=sys.stdout,
    progress: bool | None = None,
) -> dict:
    """Produce ``num_records`` numbered records and return the summary (also printed)."""
    if num_records <= 0:
        raise ValueError("--num-records must be positive")
    if progress is None:
        progress = out.isatty()
    stats = Stats(num_records, record_size)
    clock = time.monotonic
    values = [payload(i, record_size) for i in range(num_records)]
    next_report = clock() + REPORT_INTERVAL_S
    with KafkaProducer(props) as producer:
        stats.start = stats.window_start = clock()
        for i in range(num_records):
            sent_at = clock()

            def on_delivery(metadata, exception, sent_at=sent_at):
                stats.record((clock() - sent_at) * 1000.0, exception)

            producer.send(topic, values[i], callback=on_delivery)
            if throughput > 0:
                ahead = (i + 1) / throughput - (clock() - stats.start)
                if ahead > 0:
                    time.sleep(ahead)
            if (i & 0x3FF) == 0:
                now = clock()
                if progress:
                    print(
                        "\r" + progress_bar(stats.acked, num_records), end="", file=out, flush=True
                    )
                if now >= next_report:
                    if progress:
                        print("\r", end="", file=out)
                    print(stats.window_line(now), file=out, flush=True)
                    next_report = now + REPORT_INTERVAL_S
        producer.flush()
    if progress:
        print("\r" + progress_bar(stats.acked, num_records), file=out)
    summary = stats.summary()
    print(summary_line(summary), file=out, flush=True)
    if stats.errors:
        print(f"{stats.errors} records failed; the first error: {stats.first_error!r}", file=out)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkacore-perf", description="A producer performance test, after Kafka's own."
    )
    parser.add_argument("--topic", required=True)
    parser.add_argument("--num-records", type=int, required=True)
    parser.add_argument("--record-size", type=int, required=True)
    parser.add_argument(
        "--throughput", type=float, required=True, help="records/s to aim for; -1 for no limit"
    )
    parser.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE")
    parser.add_argument("--bootstrap-server", help="shorthand for bootstrap.servers")
    args = parser.parse_args(argv)
    props = parse_props(args.producer_props)
    if args.bootstrap_server:
        props["bootstrap.servers"] = args.bootstrap_server
    if "bootstrap.servers" not in props:
        parser.error("give --bootstrap-server or --producer-props bootstrap.servers=HOST:PORT")
    summary = run(args.topic, args.num_records, args.record_size, args.throughput, props)
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
