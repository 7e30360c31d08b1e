"""Our broker beside tansu, in one run: the same producers into each, the same records.

Each measurement starts a fresh broker process (``LocalBroker(kind="tansu")``: tansu, memory
storage; ``kind="kafkacore"``: ``python -m kafkacore.broker`` on a temporary ``log.dirs``, default
flush policy) with one single-partition topic, then runs one producer in a fresh child process:
100-byte values, no keys, ``linger.ms=5``, ``batch.size=1048576`` (1 MiB batches), ``acks=1`` or
``acks=all``, a Python callback per record.  The producers are ours and confluent-kafka's.  The
child warms up (connections, metadata, the broker's first segment), then tells the parent, which
reads the broker process's CPU time from ``/proc/<pid>/stat`` before and after the measured part.
We report

- records acknowledged per second, end to end, and our broker's rate as a multiple of tansu's;
- broker CPU microseconds per record (user + system time of the broker process, all threads).

    python benchmarks/bench_broker.py [--records 300000] [--repeat 4]

writes ``benchmarks/results/broker.json`` (shown in docs/benchmarks.rst).  Runs take turns
(broker innermost, then acks, then client), so noise from the shared machine hits both brokers
alike, and each round starts with the next broker (:func:`turns`): a broker that always ran
first would always run on the machine as the last case left it.  The best and the median of
``--repeat`` rounds are kept; an even ``--repeat`` gives each broker each place equally.

Where requests are small or many (``--small``), confluent-kafka's producers and consumers measure:

- ``latency-linger0`` / ``latency-linger5``: 5,000 records/s, paced, ``acks=all``, ``linger.ms``
  0 or 5: p50 and p99 of the delivery latency (produce() to the delivery report, librdkafka's
  ``Message.latency()``) and the broker's CPU per record and per Produce request (how many
  records ride in one request depends on how fast the broker answers: a slower broker gets
  fuller requests and a lower CPU per record, so the per-request figure is the fair one);
- ``batches16k-x4``: four producers at once, each as fast as it can, ``batch.size=16384``;
- ``partitions100``: one producer, as fast as it can, into 100 partitions (records spread at random,
  so each request carries many partitions' batches);
- of both, the broker's CPU per record and per Produce request, as above;
- ``fetch``: a four-partition topic filled first, then read from offset 0 to the end by one
  confluent-kafka consumer per partition, at once: records/s, the broker's CPU per record, and
  the share of a core that the busiest consumer and the broker used (a reader near 100 % would
  be the bottleneck).  Two checks of that, run only when named with ``--cases``: ``fetch-8``,
  eight partitions and eight consumers (twice the readers: if the rate does not rise with
  them, they were not the limit), and ``fetch-kcat``, one kcat per partition (C, no Python per
  record), against our broker only: the kcat here (librdkafka 2.0.2) cannot parse tansu's
  ApiVersions answer.

    python benchmarks/bench_broker.py --small [--repeat 4]

writes ``benchmarks/results/broker_small.json``, with the load average before and after each round.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

from peers import produce_confluent

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"
BROKERS = ("kafkacore", "tansu")
CLIENTS = ("kafkacore", "confluent-kafka")
ACKS = ("1", "all")
VALUE = b"x" * 100
BATCH = 1 << 20


def run_kafkacore(bootstrap, topic, n, acks):
    from kafkacore import KafkaProducer

    acked = [0]

    def on_delivery(metadata, exception):
        if exception is None:
            acked[0] += 1

    with KafkaProducer(
        {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": BATCH}
    ) as producer:
        send = producer.send
        for _ in range(n):
            send(topic, VALUE, callback=on_delivery)
        producer.flush()
    return acked[0]


def run_confluent(bootstrap, topic, n, acks):
    return produce_confluent(bootstrap, topic, n, VALUE,
                             {"acks": acks, "linger.ms": 5, "batch.size": BATCH})


RUNNERS = {"kafkacore": run_kafkacore, "confluent-kafka": run_confluent}

# -- small requests and fetch (--small) ---------------------------------------------------------

SMALL_CASES = ("latency-linger0", "latency-linger5", "batches16k-x4", "partitions100", "fetch")
#: Run only when named (``--cases``): is the reader the fetch case's bottleneck?
FETCH_CHECKS = ("fetch-8", "fetch-kcat")
LATENCY_RATE = 5000  #: records/s of the latency cases
LATENCY_SECONDS = 4.0
FETCH_PARTITIONS = 4
#: The fetch cases: partitions of the topic, one reader each (confluent-kafka consumers, or kcat)
FETCH_CASES = {"fetch": FETCH_PARTITIONS, "fetch-8": 2 * FETCH_PARTITIONS,
               "fetch-kcat": FETCH_PARTITIONS}


class ProduceRequestCount:
    """How many Produce requests a confluent-kafka producer has sent, from librdkafka's
    statistics: how many records ride in one request depends on how fast the broker answers (a
    slower broker gets fuller requests and looks cheaper per record), so the broker's CPU is
    compared per request too."""

    def __init__(self):
        self.reports = []
        #: the producer's settings that make it report
        self.config = {"statistics.interval.ms": 100,
                       "stats_cb": lambda s: self.reports.append(json.loads(s))}

    def read(self, producer):
        """Produce requests sent so far, from a report newer than this call (None if none
        came within 10 s)."""
        self.reports.clear()
        deadline = time.monotonic() + 10
        while not self.reports and time.monotonic() < deadline:
            producer.poll(0.05)
        if not self.reports:
            return None
        return sum(b.get("req", {}).get("Produce", 0) for b in self.reports[-1]["brokers"].values())


def latency_child(bootstrap, topic, linger_ms):
    """Paced at LATENCY_RATE records/s for LATENCY_SECONDS; prints the latencies' percentiles
    and how many Produce requests carried the records (ProduceRequestCount)."""
    from confluent_kafka import Producer

    latencies = []
    count = ProduceRequestCount()

    def on_delivery(err, msg):
        if err is None:
            latencies.append(msg.latency())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "linger.ms": linger_ms, "enable.idempotence": False, **count.config})
    for _ in range(200):  # warm: connections, metadata
        producer.produce(topic, VALUE, callback=on_delivery)
    producer.flush(30)
    requests_before = count.read(producer)
    latencies.clear()
    print("warm", flush=True)
    sys.stdin.readline()
    n = int(LATENCY_RATE * LATENCY_SECONDS)
    start = time.perf_counter()
    for i in range(n):
        due = start + i / LATENCY_RATE
        while (now := time.perf_counter()) < due:
            producer.poll(min(due - now, 0.001))
        producer.produce(topic, VALUE, callback=on_delivery)
        producer.poll(0)
    producer.flush(60)
    seconds = time.perf_counter() - start
    requests_after = count.read(producer)
    latencies.sort()
    print(json.dumps({
        "acked": len(latencies), "seconds": seconds,
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
        "requests": None if requests_before is None or requests_after is None
        else requests_after - requests_before,
    }), flush=True)


def flood_child(bootstrap, topic, n, config):
    """As fast as it can: warm, wait for "go", send ``n`` records, print JSON (with the
    Produce requests that carried them: ProduceRequestCount)."""
    produce_confluent(bootstrap, topic, 2000, VALUE, config)
    print("warm", flush=True)
    sys.stdin.readline()
    wall0 = time.perf_counter()
    count, requests = ProduceRequestCount(), []
    acked = produce_confluent(bootstrap, topic, n, VALUE, {**config, **count.config},
                              on_flushed=lambda producer: requests.append(count.read(producer)))
    seconds = time.perf_counter() - wall0  # (reading the count waits for a report: not timed)
    print(json.dumps({"acked": acked, "seconds": seconds, "requests": requests[0]}), flush=True)


def small_case_children(case, bootstrap, topic, n):
    """The child processes' arguments for ``case`` (each prints "warm", then its JSON)."""
    if case.startswith("latency"):
        return [["--small-child", case, "--bootstrap", bootstrap, "--topic", topic]]
    if case in FETCH_CASES:
        reader = "kcat" if case == "fetch-kcat" else "fetch"
        partitions = FETCH_CASES[case]
        return [["--small-child", f"{reader}:{p}", "--bootstrap", bootstrap, "--topic", topic,
                 "--records", str(n // partitions)] for p in range(partitions)]
    count = 4 if case == "batches16k-x4" else 1
    return [["--small-child", case, "--bootstrap", bootstrap, "--topic", topic,
             "--records", str(n // count)]] * count


def small_child(case, bootstrap, topic, n):
    if case.startswith("latency"):
        latency_child(bootstrap, topic, 0 if case == "latency-linger0" else 5)
    elif case == "batches16k-x4":
        flood_child(bootstrap, topic, n, {"acks": "all", "linger.ms": 5, "batch.size": 16384})
    elif case == "partitions100":
        flood_child(bootstrap, topic, n, {"acks": "all", "linger.ms": 5, "batch.size": BATCH,
                                          "partitioner": "random",
                                          "sticky.partitioning.linger.ms": 0})
    elif case.startswith("fetch:"):
        consumer_child(bootstrap, topic, int(case.partition(":")[2]), n)
    elif case.startswith("kcat:"):
        kcat_child(bootstrap, topic, int(case.partition(":")[2]), n)
    else:
        raise ValueError(case)


def run_children(broker, args_list):
    """Start the children, wait until all are warm, then measure them together."""
    procs = [subprocess.Popen([sys.executable, __file__, *a], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for a in args_list]
    try:
        for proc in procs:
            line = proc.stdout.readline()
            if line.strip() != "warm":
                raise RuntimeError(f"a child said {line!r}")
        cpu0 = process_cpu_s(broker.pid)
        wall0 = time.perf_counter()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outs = [proc.communicate(timeout=600)[0] for proc in procs]
        wall = time.perf_counter() - wall0
        cpu = process_cpu_s(broker.pid) - cpu0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if any(proc.returncode for proc in procs):
        raise RuntimeError("a child failed")
    return [json.loads(out.strip().splitlines()[-1]) for out in outs], wall, cpu


def fill(bootstrap, topic, n, partitions):
    """``n`` records, the same number into each of ``partitions`` (for the fetch cases)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": BATCH, "queue.buffering.max.messages": 1_000_000})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(120):
        raise RuntimeError("the fill did not finish")


def consumer_child(bootstrap, topic, partition, n):
    """Read ``n`` records of one partition from offset 0 (kcat's librdkafka cannot talk to
    tansu here, confluent-kafka's can: the same library, a newer version)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-fetch",
                         "enable.auto.commit": False})
    consumer.list_topics(topic, timeout=30)
    print("warm", flush=True)
    sys.stdin.readline()
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    consumer.assign([TopicPartition(topic, partition, 0)])
    got = 0
    while got < n:
        for msg in consumer.consume(10000, timeout=1.0):
            if msg.error() is None:
                got += 1
    seconds = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0  # all its threads: librdkafka's and the Python loop
    consumer.close()
    print(json.dumps({"acked": got, "seconds": seconds, "cpu_s": cpu}), flush=True)


def kcat_child(bootstrap, topic, partition, n):
    """kcat (C, librdkafka, no group) reads partition ``partition`` from offset 0 to its end,
    printing nothing per record: a reader far cheaper per record than a Python consumer."""
    import resource
    import shutil

    kcat = shutil.which("kcat")
    if kcat is None:
        raise RuntimeError("kcat is not installed (Debian's package kcat)")
    command = [kcat, "-C", "-b", bootstrap, "-t", topic, "-p", str(partition),
               "-o", "beginning", "-e", "-q", "-f", "%o\n"]
    print("warm", flush=True)
    sys.stdin.readline()
    wall0 = time.perf_counter()
    out = subprocess.run(command, capture_output=True, check=True, timeout=600).stdout
    seconds = time.perf_counter() - wall0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    got = out.count(b"\n")
    if got != n:
        raise RuntimeError(f"kcat read {got} records of partition {partition}, not {n}")
    print(json.dumps({"acked": got, "seconds": seconds,
                      "cpu_s": usage.ru_utime + usage.ru_stime}), flush=True)


def measure_small(broker_kind, case, n):
    from kafkacore import admin
    from kafkacore.testing import LocalBroker

    partitions = {"partitions100": 100, **FETCH_CASES}.get(case, 1)
    with LocalBroker(kind=broker_kind) as broker:
        topic = "bench-small"
        admin.create_topics(broker.bootstrap, {topic: partitions})
        row = {"broker": broker_kind, "case": case}
        if case in FETCH_CASES:
            fill(broker.bootstrap, topic, n, partitions)
        results, wall, cpu = run_children(
            broker, small_case_children(case, broker.bootstrap, topic, n))
        acked = sum(r["acked"] for r in results)
        row.update(records=acked, records_per_sec=acked / wall,
                   broker_cpu_us_per_record=cpu * 1e6 / acked)
        if case in FETCH_CASES:  # is a consumer the bottleneck? its CPU over its wall time
            row["consumer_cpu_share"] = max(r["cpu_s"] / r["seconds"] for r in results)
            row["broker_cpu_share"] = cpu / wall
        if case.startswith("latency"):
            row.update(p50_ms=results[0]["p50_ms"], p99_ms=results[0]["p99_ms"])
        if "requests" in results[0] and all(r["requests"] for r in results):
            requests = sum(r["requests"] for r in results)
            row.update(records_per_request=acked / requests,
                       broker_cpu_us_per_request=cpu * 1e6 / requests)
        return row


def turns(brokers: list[str], round_: int) -> list[str]:
    """The brokers in the order they run in round ``round_``: each round starts one later."""
    shift = round_ % len(brokers)
    return brokers[shift:] + brokers[:shift]


def main_small(args):
    cases = args.cases or list(SMALL_CASES)
    records = {"batches16k-x4": args.records, "partitions100": args.records,
               **{case: args.records for case in FETCH_CASES}}
    runs: dict[tuple[str, str], list[dict]] = {}
    loads = []
    for round_ in range(args.repeat):
        loads.append(os.getloadavg()[0])
        for case in cases:
            for broker_kind in turns(args.brokers, round_):
                if case == "fetch-kcat" and broker_kind == "tansu":
                    continue  # kcat's librdkafka (2.0.2) cannot read tansu's ApiVersions
                row = measure_small(broker_kind, case, records.get(case, 0))
                row["load"] = os.getloadavg()[0]
                runs.setdefault((case, broker_kind), []).append(row)
                extra = (f" p50 {row['p50_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms"
                         if "p50_ms" in row else "")
                if "broker_cpu_us_per_request" in row:
                    extra += (f", {row['broker_cpu_us_per_request']:.1f} µs per request"
                              f" ({row['records_per_request']:.2f} records each)")
                if "consumer_cpu_share" in row:
                    extra += (f" busiest consumer {row['consumer_cpu_share']:.0%} of a core,"
                              f" broker {row['broker_cpu_share']:.0%}")
                print(f"{case:16} {broker_kind:10} {row['records_per_sec']:>10,.0f} rec/s "
                      f"{row['broker_cpu_us_per_record']:>7.2f} µs broker CPU/rec{extra}"
                      f" (load {row['load']:.1f})", flush=True)
    loads.append(os.getloadavg()[0])
    keys = ("records_per_sec", "broker_cpu_us_per_record", "broker_cpu_us_per_request",
            "records_per_request", "p50_ms", "p99_ms", "consumer_cpu_share", "broker_cpu_share")
    medians = {}
    for (case, broker_kind), tries in runs.items():
        medians.setdefault(case, {})[broker_kind] = {
            k: statistics.median(r[k] for r in tries) for k in keys if k in tries[0]}
    print()
    ratios = {}
    for case, by in medians.items():
        if {"kafkacore", "tansu"} <= by.keys():
            ratios[case] = {k: by["kafkacore"][k] / by["tansu"][k] for k in by["tansu"]}
            print(f"{case:16} kafkacore / tansu (medians): " + ", ".join(
                f"{k} x{v:.2f}" for k, v in ratios[case].items()))
    print(f"load average (1 min) at each round's start and the end: {loads}")
    if args.no_save:
        return
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "broker_small.json").write_text(json.dumps({
        "when": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "records": args.records, "repeat": args.repeat, "loads": loads,
        "medians": medians, "ratios": ratios,
        "runs": [r for tries in runs.values() for r in tries],
    }, indent=2) + "\n")


def child(client, bootstrap, topic, n, acks):
    """One producer in this fresh process: warm up, say so, wait for "go", measure, print JSON."""
    runner = RUNNERS[client]
    runner(bootstrap, topic, max(n // 20, 1000), acks)
    print("warm", flush=True)
    sys.stdin.readline()
    wall0 = time.perf_counter()
    acked = runner(bootstrap, topic, n, acks)
    wall = time.perf_counter() - wall0
    print(json.dumps({"acked": acked, "seconds": wall}), flush=True)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (``/proc/<pid>/stat``)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(broker_kind, client, acks, n):
    from kafkacore import admin
    from kafkacore.testing import LocalBroker

    with LocalBroker(kind=broker_kind) as broker:
        topic = "bench-broker"
        admin.create_topics(broker.bootstrap, {topic: 1})
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", client, "--bootstrap", broker.bootstrap,
             "--topic", topic, "--records", str(n), "--acks", acks],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            line = proc.stdout.readline()
            if line.strip() != "warm":
                raise RuntimeError(f"{client} child said {line!r}")
            cpu0 = process_cpu_s(broker.pid)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            out, _ = proc.communicate(timeout=1800)
            cpu = process_cpu_s(broker.pid) - cpu0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"{client} into {broker_kind} failed with {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    return {
        "broker": broker_kind, "client": client, "acks": acks, "records": n,
        "acked": result["acked"], "seconds": result["seconds"],
        "records_per_sec": result["acked"] / result["seconds"],
        "broker_cpu_us_per_record": cpu * 1e6 / n,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--brokers", nargs="+", default=list(BROKERS))
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS))
    parser.add_argument("--child")
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--acks", default="all")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--small", action="store_true",
                        help="the small-request and fetch cases instead")
    parser.add_argument("--cases", nargs="+", choices=SMALL_CASES + FETCH_CHECKS)
    parser.add_argument("--small-child")
    args = parser.parse_args()
    if args.small_child:
        small_child(args.small_child, args.bootstrap, args.topic, args.records)
        return
    if args.small:
        main_small(args)
        return
    if args.child:
        child(args.child, args.bootstrap, args.topic, args.records, args.acks)
        return
    runs: dict[tuple[str, str, str], list[dict]] = {}
    for round_ in range(args.repeat):
        for client in args.clients:
            for acks in ACKS:
                for broker_kind in turns(args.brokers, round_):
                    row = measure(broker_kind, client, acks, args.records)
                    runs.setdefault((broker_kind, client, acks), []).append(row)
                    print(f"{broker_kind:10} {client:16} acks={acks:4}"
                          f"{row['records_per_sec']:>12,.0f} rec/s "
                          f"{row['broker_cpu_us_per_record']:>7.2f} µs broker CPU/rec",
                          flush=True)
    rows = []
    for tries in runs.values():
        best = dict(max(tries, key=lambda r: r["records_per_sec"]))
        best["broker_cpu_us_per_record"] = min(r["broker_cpu_us_per_record"] for r in tries)
        # The median too: on a shared machine one lucky run can make the best.
        best["median_records_per_sec"] = statistics.median(r["records_per_sec"] for r in tries)
        best["median_broker_cpu_us_per_record"] = statistics.median(
            r["broker_cpu_us_per_record"] for r in tries)
        best["all_records_per_sec"] = [round(r["records_per_sec"]) for r in tries]
        rows.append(best)
    print()
    ratios = {}
    for client in args.clients:
        for acks in ACKS:
            pair = {r["broker"]: r for r in rows if r["client"] == client and r["acks"] == acks}
            if {"kafkacore", "tansu"} <= pair.keys():
                ratio = pair["kafkacore"]["records_per_sec"] / pair["tansu"]["records_per_sec"]
                median = (pair["kafkacore"]["median_records_per_sec"]
                          / pair["tansu"]["median_records_per_sec"])
                ratios[f"{client} acks={acks}"] = {"best": ratio, "median": median}
                print(f"{client:16} acks={acks:4} kafkacore broker is x{ratio:.2f} tansu's rate"
                      f" (best of each), x{median:.2f} (medians)")
    if args.no_save:
        return
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "broker.json").write_text(json.dumps({
        "when": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "records": args.records, "repeat": args.repeat,
        "rows": rows, "ratios": ratios,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
