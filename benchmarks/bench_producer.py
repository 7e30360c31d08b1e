"""End-to-end producer benchmark: kafkacore (sync and asyncio) beside confluent-kafka, aiokafka
and kafka-python.

Same broker (a local tansu by default, or ours with ``--broker kafkacore``; a fresh one for each
run so its memory does not grow across runs),
same records (100-byte values, no keys), same settings (acks=all, linger 5 ms, 1 MiB batches), and
a Python callback per record for every client.  Each client runs in its own fresh process, so its
CPU time (``time.process_time()``: every thread of the process) is its own.  We report

- acked records per second, end to end;
- client CPU microseconds per record (process CPU time / records), which does not depend on how
  fast the broker is.

    python benchmarks/bench_producer.py [--records 300000] [--repeat 2] [--broker tansu]

writes ``benchmarks/results/producer.json`` and ``docs/_static/bench/producer.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

from peers import produce_confluent

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"
CHART = HERE.parent / "docs" / "_static" / "bench" / "producer.png"
CLIENTS = ("kafkacore", "kafkacore.aio", "confluent-kafka", "aiokafka", "kafka-python")
VALUE = b"x" * 100
BATCH = 1 << 20


def run_kafkacore(bootstrap, topic, n):
    from kafkacore import KafkaProducer

    acked = [0]

    def on_delivery(metadata, exception):
        if exception is None:
            acked[0] += 1

    with KafkaProducer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": BATCH}
    ) as producer:
        send = producer.send
        for _ in range(n):
            send(topic, VALUE, callback=on_delivery)
        producer.flush()
    return acked[0]


def run_confluent(bootstrap, topic, n):
    return produce_confluent(bootstrap, topic, n, VALUE,
                             {"acks": "all", "linger.ms": 5, "batch.size": BATCH})


def run_kafka_python(bootstrap, topic, n):
    from kafka import KafkaProducer

    acked = [0]

    def on_delivery(metadata):
        acked[0] += 1

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, batch_size=BATCH)
    for _ in range(n):
        producer.send(topic, VALUE).add_callback(on_delivery)
    producer.flush(timeout=300)
    producer.close()
    return acked[0]


def run_aiokafka(bootstrap, topic, n):
    import asyncio

    from aiokafka import AIOKafkaProducer

    acked = [0]

    def on_delivery(fut):
        if fut.exception() is None:
            acked[0] += 1

    async def main():
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=BATCH
        )
        await producer.start()
        try:
            for _ in range(n):
                fut = await producer.send(topic, VALUE)
                fut.add_done_callback(on_delivery)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(main())
    return acked[0]


def run_kafkacore_aio(bootstrap, topic, n):
    import asyncio

    from kafkacore.aio import AIOKafkaProducer

    acked = [0]

    def on_delivery(future):
        if future.exception() is None:
            acked[0] += 1

    async def main():
        # The same loop as aiokafka's below: await send(), a done-callback on its future.
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=BATCH
        ) as producer:
            send = producer.send
            for _ in range(n):
                future = await send(topic, VALUE)
                future.add_done_callback(on_delivery)
            await producer.flush()

    asyncio.run(main())
    return acked[0]


RUNNERS = {
    "kafkacore": run_kafkacore,
    "kafkacore.aio": run_kafkacore_aio,
    "confluent-kafka": run_confluent,
    "aiokafka": run_aiokafka,
    "kafka-python": run_kafka_python,
}


def child(client, bootstrap, topic, n):
    """Run one client in this (fresh) process and print its figures as JSON."""
    runner = RUNNERS[client]
    warm = max(n // 20, 1000)
    runner(bootstrap, topic, warm)  # connections, metadata, imports, JIT-free warm-up
    cpu0, wall0 = time.process_time(), time.perf_counter()
    acked = runner(bootstrap, topic, n)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(json.dumps({
        "client": client, "records": n, "acked": acked, "seconds": wall,
        "records_per_sec": acked / wall, "cpu_us_per_record": cpu * 1e6 / n,
    }))


def measure(client, n, broker_kind="tansu"):
    from kafkacore import admin
    from kafkacore.testing import LocalBroker

    with LocalBroker(kind=broker_kind) as broker:
        topic = f"bench-{client}"
        admin.create_topics(broker.bootstrap, {topic: 1})
        done = subprocess.run(
            [sys.executable, __file__, "--child", client, "--bootstrap", broker.bootstrap,
             "--topic", topic, "--records", str(n)],
            capture_output=True, text=True, timeout=1800,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{client} failed:\n{done.stdout}\n{done.stderr}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["load_average"] = round(os.getloadavg()[0], 1)  # the machine is shared: say how busy
    return row


def chart(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["client"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.barh(names, [r["records_per_sec"] / 1000 for r in rows], color="#4c78a8")
    left.set_xlabel("thousand records acked per second (higher is better)")
    right.barh(names, [r["cpu_us_per_record"] for r in rows], color="#f58518")
    right.set_xlabel("client CPU µs per record (lower is better)")
    for ax in (left, right):
        ax.invert_yaxis()
    fig.suptitle("100-byte records, acks=all, linger 5 ms, 1 MiB batches, a callback per record")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS))
    parser.add_argument("--broker", choices=("tansu", "kafkacore"), default="tansu")
    parser.add_argument("--child")
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.bootstrap, args.topic, args.records)
        return
    rows = []
    for client in args.clients:
        fast = ("kafkacore", "kafkacore.aio", "confluent-kafka")
        n = args.records if client in fast else args.records // 4
        runs = [measure(client, n, args.broker) for _ in range(args.repeat)]
        best = max(runs, key=lambda r: r["records_per_sec"])
        best["cpu_us_per_record"] = min(r["cpu_us_per_record"] for r in runs)
        rows.append(best)
        print(f"{client:16} {best['records_per_sec']:>12,.0f} rec/s "
              f"{best['cpu_us_per_record']:>8.2f} µs CPU/rec  (acked {best['acked']}/{n})",
              flush=True)
    base = next((r for r in rows if r["client"] == "confluent-kafka"), None)
    if base:
        print()
        for r in rows:
            print(f"{r['client']:16} rate x{r['records_per_sec'] / base['records_per_sec']:.2f} "
                  f"of confluent-kafka, CPU/record x{r['cpu_us_per_record'] / base['cpu_us_per_record']:.2f}")
    by_name = {r["client"]: r for r in rows}
    aio, theirs, sync = (by_name.get(c) for c in ("kafkacore.aio", "aiokafka", "kafkacore"))
    if sync and base:
        print(f"\nkafkacore: CPU/record x{sync['cpu_us_per_record'] / base['cpu_us_per_record']:.2f}"
              f" of confluent-kafka's (goal <= 0.33)")
    if aio and sync:
        print(f"kafkacore.aio: CPU/record x{aio['cpu_us_per_record'] / sync['cpu_us_per_record']:.2f}"
              f" of send() (goal <= 1.2)")
    if aio and theirs:
        print(f"kafkacore.aio: x{aio['records_per_sec'] / theirs['records_per_sec']:.1f} "
              f"aiokafka's records/s")
    for r in rows:
        r["broker"] = args.broker
    print(f"(broker: {args.broker}; load average {os.getloadavg()[0]:.1f})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "producer.json").write_text(json.dumps(rows, indent=2) + "\n")
    chart(rows, CHART)


if __name__ == "__main__":
    main()
