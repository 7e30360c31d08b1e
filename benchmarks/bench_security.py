"""What TLS and SASL cost a producer: kafkacore and confluent-kafka into our broker over its
PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) listeners, in the same run.

One broker (``python -m kafkacore.broker``, its own process, so its CPU is not the clients')
listens on the three ports; each client runs in a fresh process per measurement, with the same
records (100-byte values), the same settings (acks=all, linger 5 ms, 1 MiB batches) and a
callback per record.  We report acked records per second and client CPU microseconds per record
(``time.process_time()``, every thread of the process), best of ``--repeat`` runs.

    python benchmarks/bench_security.py [--records 200000] [--repeat 3]

writes ``benchmarks/results/security.json``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid

from peers import produce_confluent

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CLIENTS = ("kafkacore", "confluent-kafka")
LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
VALUE = b"x" * 100
BATCH = 1 << 20
USER, PASSWORD = "bench", "bench-secret"


def client_settings(listener: str, ca: str) -> dict:
    settings: dict = {"security.protocol": listener}
    if "SSL" in listener:
        settings["ssl.ca.location"] = ca
    if "SASL" in listener:
        settings.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER,
                         "sasl.password": PASSWORD})
    return settings


def run_kafkacore(bootstrap, topic, n, settings):
    from kafkacore import KafkaProducer

    acked = [0]

    def on_delivery(metadata, exception):
        if exception is None:
            acked[0] += 1

    with KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                        "batch.size": BATCH, **settings}) as producer:
        send = producer.send
        for _ in range(n):
            send(topic, VALUE, callback=on_delivery)
        producer.flush()
    return acked[0]


def run_confluent(bootstrap, topic, n, settings):
    return produce_confluent(bootstrap, topic, n, VALUE,
                             {"acks": "all", "linger.ms": 5, "batch.size": BATCH, **settings})


RUNNERS = {"kafkacore": run_kafkacore, "confluent-kafka": run_confluent}


def child(client, bootstrap, topic, n, settings):
    runner = RUNNERS[client]
    runner(bootstrap, topic, max(n // 20, 1000), settings)  # connections, metadata, imports
    cpu0, wall0 = time.process_time(), time.perf_counter()
    acked = runner(bootstrap, topic, n, settings)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(json.dumps({"records": n, "acked": acked, "seconds": wall,
                      "records_per_sec": acked / wall, "cpu_us_per_record": cpu * 1e6 / n}))


def start_broker(directory: pathlib.Path):
    sys.path.insert(0, str(ROOT / "tests"))
    from certs import make_pki

    from kafkacore.testing import free_port

    pki = make_pki(directory)
    addresses = {name: f"127.0.0.1:{free_port()}" for name in LISTENERS}
    args = [sys.executable, "-m", "kafkacore.broker", "--log-level", "WARNING",
            "--listeners", ",".join(f"{name}://{a}" for name, a in addresses.items()),
            "--log-dirs", str(directory / "data"),
            "--config", f"ssl.keystore.location={pki.cert}",
            "--config", f"ssl.key.location={pki.key}",
            "--config", f"sasl.users={USER}:{PASSWORD}",
            "--config", "sasl.enabled.mechanisms=SCRAM-SHA-512"]
    log = open(directory / "broker.log", "w")  # noqa: SIM115 - open as long as the broker
    broker = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
    assert broker.stdout is not None
    if not broker.stdout.readline():  # "kafkacore-broker listening on ...": ready
        raise RuntimeError(f"the broker exited: {(directory / 'broker.log').read_text()}")
    return broker, addresses, str(pki.ca)


def measure(client, listener, bootstrap, ca, n):
    from kafkacore import admin

    topic = f"bench-{listener.lower()}-{uuid.uuid4().hex[:6]}"
    admin.create_topics(bootstrap[("PLAINTEXT")], {topic: 1})
    done = subprocess.run(
        [sys.executable, __file__, "--child", client, "--bootstrap", bootstrap[listener],
         "--topic", topic, "--records", str(n),
         "--settings", json.dumps(client_settings(listener, ca))],
        capture_output=True, text=True, timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{client} over {listener} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--settings")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.bootstrap, args.topic, args.records, json.loads(args.settings))
        return
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        broker, bootstrap, ca = start_broker(pathlib.Path(tmp))
        try:
            runs: dict = {}
            for _ in range(args.repeat):  # interleaved, so a noisy moment hits every row
                for listener in LISTENERS:
                    for client in CLIENTS:
                        runs.setdefault((client, listener), []).append(
                            measure(client, listener, bootstrap, ca, args.records))
        finally:
            broker.terminate()
            broker.wait(timeout=60)
    rows = []
    for (client, listener), results in runs.items():
        best = max(results, key=lambda r: r["records_per_sec"])
        rows.append({"client": client, "listener": listener, "records": args.records,
                     "acked": best["acked"], "records_per_sec": best["records_per_sec"],
                     "cpu_us_per_record": min(r["cpu_us_per_record"] for r in results)})
    for r in rows:
        plain = next(p for p in rows if p["client"] == r["client"]
                     and p["listener"] == "PLAINTEXT")
        r["rate_vs_plaintext"] = r["records_per_sec"] / plain["records_per_sec"]
        r["cpu_vs_plaintext"] = r["cpu_us_per_record"] / plain["cpu_us_per_record"]
        print(f"{r['client']:16} {r['listener']:10} {r['records_per_sec']:>10,.0f} rec/s "
              f"{r['cpu_us_per_record']:>6.2f} µs CPU/rec   x{r['rate_vs_plaintext']:.2f} rate, "
              f"x{r['cpu_vs_plaintext']:.2f} CPU of its plaintext  (acked {r['acked']})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "security.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
