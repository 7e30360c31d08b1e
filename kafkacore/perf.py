"""kafkacore-perf: Kafka's ``kafka-producer-perf-test``, for kafkacore.

    kafkacore-perf --topic T --num-records N --record-size S --throughput -1 \\
        --producer-props bootstrap.servers=127.0.0.1:9092 linger.ms=5

Kafka's options: ``--producer.config FILE`` (a .properties file; ``--producer-props`` override
it), ``--payload-file FILE`` with ``--payload-delimiter`` (instead of ``--record-size``),
``--throughput`` (records/s, -1 for no limit) and ``--print-metrics``.  A bad command line is a
one-line error and exit code 2; a producer that cannot run (a bad setting, no broker) a one-line
error and exit code 1; records that failed, exit code 1 after the summary.

It prints what the Java tool prints — a line every five seconds, then the summary with records/s,
MB/s, average and maximum latency and the 50th, 95th, 99th and 99.9th percentiles — with a
progress bar on a terminal.  Each record's payload starts with its number, so a reader can check
afterwards that every record arrived exactly once (``make demo`` does).
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn, TextIO

from kafkacore.errors import KafkaError
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
        if not sep or not name.strip():
            raise UsageError(f"--producer-props wants key=value, got {pair!r}")
        props[name.strip()] = value.strip()
    return props


def read_properties(path: str) -> dict[str, str]:
    """A Java ``.properties`` file as Kafka's tools read ``--producer.config``: ``key=value``
    (or ``key: value``) lines; ``#`` and ``!`` start comments."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--producer.config {path}: {exc.strerror or exc}") from None
    props = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            raise UsageError(f"--producer.config {path}, line {number}: expected key=value")
        props[line[:cut].strip()] = line[cut + 1 :].strip()
    return props


def read_payloads(path: str, delimiter: str) -> list[bytes]:
    """Java's ``--payload-file``: UTF-8 text cut at ``delimiter``; empty pieces are skipped."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UsageError(f"--payload-file {path}: {reason or exc}") from None
    payloads = [piece.encode() for piece in text.split(delimiter) if piece]
    if not payloads:
        raise UsageError(f"--payload-file {path}: no payloads in it")
    return payloads


class UsageError(Exception):
    """A bad command line: reported in one line, exit code 2 (as argparse does)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: the usage is one --help away.
        raise UsageError(message)


def run(
    topic: str,
    num_records: int,
    record_size: int | None,
    throughput: float,
    props: dict[str, Any],
    out: TextIO = sys.stdout,
    progress: bool | None = None,
    payloads: list[bytes] | None = None,
    print_metrics: bool = False,
) -> dict[str, Any]:
    """Produce ``num_records`` records and return the summary (also printed).

    The records are numbered payloads of ``record_size`` bytes, or (Java's ``--payload-file``)
    drawn at random from ``payloads``.
    """
    if num_records <= 0:
        raise ValueError("--num-records must be positive")
    if progress is None:
        progress = out.isatty()
    clock = time.monotonic
    if payloads:
        rng = random.Random(0)
        values = [rng.choice(payloads) for _ in range(num_records)]
        record_size = sum(map(len, values)) // num_records  # for MB/sec
    elif record_size is not None:
        values = [payload(i, record_size) for i in range(num_records)]
    else:
        raise ValueError("give --record-size or --payload-file")
    stats = Stats(num_records, record_size)
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
        metrics = producer.metrics() if print_metrics else None
    if progress:
        print("\r" + progress_bar(stats.acked, num_records), file=out)
    summary = stats.summary()
    print(summary_line(summary), file=out, flush=True)
    if stats.errors:
        print(f"{stats.errors} records failed; the first error: {stats.first_error!r}", file=out)
    if metrics is not None:
        # Java's --print-metrics: one "name : value" line per metric, names aligned.
        names = {f"producer-metrics:{name}": value for name, value in sorted(metrics.items())}
        width = max(map(len, names))
        print(f"\n{'Metric Name':<{width}}   Value", file=out)
        for name, value in names.items():
            print(f"{name:<{width}} : {value:.3f}", file=out)
    return summary


def main(argv: list[str] | None = None) -> int:
    """The console script: exit 0 when every record was acknowledged, 1 when some failed or the
    producer could not run (a broker not reachable), 2 for a bad command line; errors are one
    line on stderr, never a traceback."""
    # The producer's warnings (a broker not reachable) as one line each, in the tool's voice.
    logging.basicConfig(format="kafkacore-perf: %(levelname)s: %(message)s",
                        level=logging.WARNING)
    parser = _Parser(
        prog="kafkacore-perf", description="A producer performance test, after Kafka's own."
    )
    parser.add_argument("--topic", required=True)
    parser.add_argument("--num-records", type=int, required=True)
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--record-size", type=int, help="bytes per record")
    size.add_argument("--payload-file", metavar="FILE",
                      help="UTF-8 text whose pieces (see --payload-delimiter) are sent at random")
    parser.add_argument("--payload-delimiter", default="\n",
                        help="what separates the payloads in --payload-file (default: newline)")
    parser.add_argument(
        "--throughput", type=float, required=True, help="records/s to aim for; -1 for no limit"
    )
    parser.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE")
    parser.add_argument("--producer.config", dest="producer_config", metavar="FILE",
                        help="producer settings in a .properties file (--producer-props win)")
    parser.add_argument("--print-metrics", action="store_true",
                        help="print the producer's metrics at the end")
    parser.add_argument("--bootstrap-server", help="shorthand for bootstrap.servers")
    try:
        args = parser.parse_args(argv)
        props: dict[str, Any] = {}
        if args.producer_config:
            props.update(read_properties(args.producer_config))
        props.update(parse_props(args.producer_props))
        if args.bootstrap_server:
            props["bootstrap.servers"] = args.bootstrap_server
        if "bootstrap.servers" not in props:
            raise UsageError("give --bootstrap-server or --producer-props bootstrap.servers=HOST:PORT")
        if args.num_records <= 0:
            raise UsageError(f"--num-records must be positive, not {args.num_records}")
        if args.record_size is not None and args.record_size <= 0:
            raise UsageError(f"--record-size must be positive, not {args.record_size}")
        payloads = (read_payloads(args.payload_file, args.payload_delimiter)
                    if args.payload_file else None)
        if args.record_size is not None:
            payload(args.num_records - 1, args.record_size)  # room for the largest number?
    except (UsageError, ValueError) as exc:
        print(f"kafkacore-perf: error: {exc}", file=sys.stderr)
        return 2
    try:
        summary = run(args.topic, args.num_records, args.record_size, args.throughput, props,
                      payloads=payloads, print_metrics=args.print_metrics)
    except KafkaError as exc:  # a bad setting, no broker, a closed producer...
        print(f"kafkacore-perf: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kafkacore-perf: interrupted", file=sys.stderr)
        return 130
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
