"""Transactional throughput: kafkacore's transactional producer against its idempotent one, and
against confluent-kafka's transactional producer, on the same broker in the same run.

    PYTHONPATH=. python benchmarks/bench_transactions.py [--records 200000] [--rounds 3]
        [--kind tansu|kafkacore] [--json benchmarks/results/transactions.json]

Each mode sends ``--records`` records of 100 bytes (acks=all, linger.ms 5, a Python callback per
record) to a fresh one-partition topic and reports records acknowledged (or committed) per second,
and the producing process's CPU per record.  The transactional modes commit every 100 ms, or every
1,000 records; a commit is a flush plus EndTxn, so the producer stands still while the markers are
written.  The modes take turns, round after round (each round starting with another one), so the
shared machine's slow moments fall on all of them alike; the median of the rounds is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.testing import LocalBroker

VALUE = b"x" * 100


def run_kafkacore(bootstrap: str, topic: str, n: int, commit: str | None) -> int:
    """Send ``n`` records; ``commit``: None (idempotent), "100ms" or "1000rec"."""
    acked = [0]

    def callback(metadata: Any, exception: Any) -> None:
        if exception is None:
            acked[0] += 1

    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "batch_size": 1 << 20}
    if commit is not None:
        settings["transactional_id"] = f"bench-{uuid.uuid4().hex[:8]}"
    with KafkaProducer(**settings) as p:
        send = p.send
        if commit is None:
            for _ in range(n):
                send(topic, VALUE, callback=callback)
            p.flush()
            return acked[0]
        p.init_transactions()
        p.begin_transaction()
        every = 1000 if commit == "1000rec" else None
        next_commit = time.monotonic() + 0.1
        for i in range(1, n + 1):
            send(topic, VALUE, callback=callback)
            if every is not None:
                if i % every == 0:
                    p.commit_transaction()
                    p.begin_transaction()
            elif i & 0xFF == 0 and time.monotonic() >= next_commit:
                p.commit_transaction()
                p.begin_transaction()
                next_commit = time.monotonic() + 0.1
        p.commit_transaction()
    return acked[0]


def run_confluent(bootstrap: str, topic: str, n: int) -> int:
    """confluent-kafka's transactional producer, committing every 100 ms."""
    from confluent_kafka import Producer

    acked = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += 1

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"ck-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    p.init_transactions(30)
    p.begin_transaction()
    next_commit = time.monotonic() + 0.1
    produce, poll = p.produce, p.poll
    for i in range(1, n + 1):
        while True:
            try:
                produce(topic, VALUE, callback=on_delivery)
                break
            except BufferError:
                poll(0.001)
        if i & 0xFF == 0:
            poll(0)
            if time.monotonic() >= next_commit:
                p.commit_transaction(60)
                p.begin_transaction()
                next_commit = time.monotonic() + 0.1
    p.commit_transaction(60)
    return acked[0]


MODES = {
    "kafkacore idempotent": lambda b, t, n: run_kafkacore(b, t, n, None),
    "kafkacore transactional, commit every 100 ms": lambda b, t, n: run_kafkacore(b, t, n,
                                                                                 "100ms"),
    "kafkacore transactional, commit every 1,000 records": lambda b, t, n: run_kafkacore(
        b, t, n, "1000rec"),
    "confluent-kafka transactional, commit every 100 ms": run_confluent,
}


def measure(bootstrap: str, mode: str, n: int) -> tuple[float, float]:
    topic = f"txbench-{uuid.uuid4().hex[:10]}"
    create_topics(bootstrap, {topic: 1})
    cpu, wall = time.process_time(), time.perf_counter()
    acked = MODES[mode](bootstrap, topic, n)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if acked != n:
        raise SystemExit(f"{mode}: {acked} of {n} records acknowledged")
    return n / wall, cpu / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kind", default="tansu", choices=("tansu", "kafkacore"))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    load_at_start = round(os.getloadavg()[0], 2)  # the machine is shared: write it beside
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    cpus: dict[str, list[float]] = {m: [] for m in MODES}
    for round_ in range(args.rounds):
        # A fresh broker each round: tansu keeps every record in memory.
        with LocalBroker(kind=args.kind) as broker:
            modes = list(MODES)
            # Each round starts with another mode: none always runs first, on a cold broker.
            for mode in modes[round_ % len(modes):] + modes[:round_ % len(modes)]:
                rate, cpu = measure(broker.bootstrap, mode, args.records)
                rates[mode].append(rate)
                cpus[mode].append(cpu)
                print(f"round {round_ + 1}: {mode}: {rate:,.0f} records/s, {cpu:.2f} us CPU/record",
                      file=sys.stderr)
    idem = statistics.median(rates["kafkacore idempotent"])
    ck = statistics.median(rates["confluent-kafka transactional, commit every 100 ms"])
    result = {"broker": args.kind, "records": args.records, "rounds": args.rounds,
              "load_average_1min_at_start": load_at_start, "modes": {}}
    print(f"\n{args.kind}, {args.records:,} records of 100 bytes, median of {args.rounds} rounds")
    for mode in MODES:
        rate, cpu = statistics.median(rates[mode]), statistics.median(cpus[mode])
        result["modes"][mode] = {"records_per_s": round(rate), "cpu_us_per_record": round(cpu, 2),
                                 "vs_idempotent": round(rate / idem, 2),
                                 "vs_confluent_transactional": round(rate / ck, 2)}
        print(f"{mode:55s} {rate:10,.0f}/s {cpu:6.2f} us/rec  x{rate / idem:.2f} of idempotent  "
              f"x{rate / ck:.2f} of confluent txn")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
