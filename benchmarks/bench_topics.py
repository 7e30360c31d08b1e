"""Creating many topics, and what one topic costs among many: our broker beside tansu.

Each broker (``LocalBroker(kind="kafkacore")`` on a temporary ``log.dirs`` on the disk, the same
with its ``log.dirs`` in memory (``kafkacore-tmpfs``: a tmpfs, ``/dev/shm``, the like of tansu's
storage) and tansu with its memory storage) gets ``--topics`` single-partition topics in CreateTopics requests of
``--batch`` topics each, one request at a time.  We time every thousand topics, so a creation
that grows with the number of topics already there shows as later thousands taking longer
than the first.  Before the first thousand (at ``--few`` topics) and after the last we time

- a Metadata request for one topic (the median of ``--probes`` requests), and
- a produce of one record to one partition, acks=1, sent and acknowledged one at a time
  (confluent-kafka, ``linger.ms=0``; the median of ``--probes`` records).

With ``--cluster`` our 3-broker ``Cluster`` (a controller and three brokers, each its own
process; replication factor 1 so the topics spread over the brokers) gets the same topics, to
show that the controller and the brokers' metadata pulls stay linear too.  Tansu has no such
cluster, so that row has no peer.

    python benchmarks/bench_topics.py [--topics 10000] [--batch 100] [--cluster]

writes ``benchmarks/results/topics.json`` (shown in docs/benchmarks.rst) with the load
average of the machine before and after each broker's run: the machine is shared, so the
figure that means something is the ratio of two brokers measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"
TIMEOUT_MS = 120_000


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


class Admin:
    """One connection's worth of requests, sent and waited for one at a time."""

    def __init__(self, bootstrap: str) -> None:
        from kafkacore import admin
        from kafkacore.metadata import Metadata
        from kafkacore.network.client import NetworkClient, clock_ms

        self.client = NetworkClient(bootstrap, Metadata(allow_auto_topic_creation=False),
                                    request_timeout_ms=TIMEOUT_MS)
        cluster = admin.refresh_metadata(self.client, clock_ms() + TIMEOUT_MS)
        controller = cluster.controller_id
        self.node = controller if cluster.node(controller or -1) else cluster.nodes[0].node_id

    def close(self) -> None:
        self.client.close()

    def call(self, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.send_and_receive(self.node, api_key, body, TIMEOUT_MS)
        if response.error is not None:
            raise response.error
        assert response.body is not None
        return response.body

    def create_topics(self, names: list[str]) -> None:
        from kafkacore.errors import Errors
        from kafkacore.protocol.api_keys import ApiKey

        body = self.call(ApiKey.CREATE_TOPICS, {
            "topics": [{"name": n, "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []} for n in names],
            "timeout_ms": TIMEOUT_MS, "validate_only": False})
        failed = [t for t in body["topics"] if t["error_code"] != Errors.NONE]
        if failed:
            raise RuntimeError(f"{len(failed)} topics not created, e.g. {failed[0]}")

    def metadata_of(self, name: str) -> float:
        """Seconds for one Metadata request naming one topic."""
        from kafkacore.errors import Errors
        from kafkacore.protocol.api_keys import ApiKey

        t0 = time.perf_counter()
        body = self.call(ApiKey.METADATA, {
            "topics": [{"name": name}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})
        seconds = time.perf_counter() - t0
        if body["topics"][0]["error_code"] != Errors.NONE:
            raise RuntimeError(f"metadata of {name}: {body['topics'][0]}")
        return seconds


def produce_latency(bootstrap: str, topic: str, probes: int) -> float:
    """Median seconds to produce one record and have it acknowledged (acks=1)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    try:
        times = []
        for i in range(probes + 5):
            t0 = time.perf_counter()
            producer.produce(topic, b"x" * 100, partition=0)
            if producer.flush(30) != 0:
                raise RuntimeError(f"produce to {topic} not acknowledged")
            if i >= 5:  # the first ones connect and fetch metadata
                times.append(time.perf_counter() - t0)
        return statistics.median(times)
    finally:
        producer.flush(5)


def probe(admin: Admin, bootstrap: str, topic: str, probes: int) -> dict[str, float]:
    admin.metadata_of(topic)
    metadata = statistics.median(admin.metadata_of(topic) for _ in range(probes))
    return {"metadata_one_topic_ms": metadata * 1e3,
            "produce_one_record_ms": produce_latency(bootstrap, topic, probes) * 1e3}


def run(kind: str, bootstrap: str, topics: int, batch: int, few: int,
        probes: int) -> dict[str, Any]:
    admin = Admin(bootstrap)
    try:
        names = [f"bench-topic-{i:05d}" for i in range(topics)]
        admin.create_topics(names[:few])
        at_few = probe(admin, bootstrap, names[0], probes)
        per_thousand = []
        t0 = time.perf_counter()
        for start in range(0, topics, batch):
            admin.create_topics(names[max(start, few):start + batch])
            done = start + batch
            if done % 1000 == 0:
                per_thousand.append(round(time.perf_counter() - t0, 3))
                t0 = time.perf_counter()
                print(f"  {kind}: {done:6} topics, the last thousand in "
                      f"{per_thousand[-1]:.2f} s", flush=True)
        at_all = probe(admin, bootstrap, names[0], probes)
    finally:
        admin.close()
    return {"per_thousand_s": per_thousand, f"at_{few}": at_few, f"at_{topics}": at_all}


#: where ``kafkacore-tmpfs`` keeps its log dirs: memory, as tansu's ``memory://`` storage does
TMPFS = pathlib.Path("/dev/shm")


@contextlib.contextmanager
def local_broker(kind: str) -> Iterator[Any]:
    """A fresh broker of ``kind``: ``kafkacore`` (its log dirs on the disk), ``kafkacore-tmpfs``
    (in memory) or ``tansu``."""
    from kafkacore.testing import LocalBroker

    if kind != "kafkacore-tmpfs":
        with LocalBroker(kind=kind) as broker:
            yield broker
        return
    with tempfile.TemporaryDirectory(dir=TMPFS, prefix="bench-topics-") as log_dirs, \
            LocalBroker(kind="kafkacore", log_dirs=log_dirs) as broker:
        yield broker


def measure(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    load0 = load_average()
    if kind == "cluster":
        from kafkacore.testing.cluster import Cluster

        # One controller, as the figures in docs/benchmarks.rst were measured (topic creation
        # through a quorum is bench_quorum_scale's).
        with Cluster(brokers=3, config={"default.replication.factor": 1},
                     controllers=1) as cluster:
            row = run(kind, cluster.bootstrap_servers, args.topics, args.batch, args.few,
                      args.probes)
    else:
        with local_broker(kind) as broker:
            row = run(kind, broker.bootstrap, args.topics, args.batch, args.few, args.probes)
    row.update(broker=kind, load_before=load0, load_after=load_average())
    return row


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (``/proc/<pid>/stat``)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_thousand(kind: str, batch: int) -> tuple[float, float]:
    """(seconds, broker CPU seconds) to create 1,000 topics in a fresh broker (one round)."""
    with local_broker(kind) as broker:
        admin = Admin(broker.bootstrap)
        try:
            admin.create_topics(["warm-up"])  # the first request's one-off costs
            names = [f"round-topic-{i:04d}" for i in range(1000)]
            cpu0, t0 = process_cpu_s(broker.pid), time.perf_counter()
            for start in range(0, 1000, batch):
                admin.create_topics(names[start:start + batch])
            return time.perf_counter() - t0, process_cpu_s(broker.pid) - cpu0
        finally:
            admin.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--few", type=int, default=10,
                        help="topics there when the first probes run")
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--brokers", nargs="*", default=["kafkacore", "kafkacore-tmpfs", "tansu"],
                        choices=["kafkacore", "kafkacore-tmpfs", "tansu"])
    parser.add_argument("--cluster", action="store_true", help="our 3-broker Cluster too")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of 1,000 topics in fresh brokers, the brokers taking turns")
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args()
    if args.topics % 1000 or 1000 % args.batch or args.few >= args.batch:
        parser.error("--topics must be thousands, --batch divide 1000, --few be below --batch")
    kinds = list(args.brokers) + (["cluster"] if args.cluster else [])
    rows = []
    # The shared machine's load moves in minutes: short rounds, taking turns (each round
    # starting with the next broker), tell the brokers apart better than long runs in a row.
    rounds: dict[str, list[float]] = {k: [] for k in args.brokers}
    cpu: dict[str, list[float]] = {k: [] for k in args.brokers}
    args.rounds_load = [load_average()]
    for r in range(args.rounds):
        shift = r % len(args.brokers)
        for kind in args.brokers[shift:] + args.brokers[:shift]:
            wall, used = first_thousand(kind, args.batch)
            rounds[kind].append(round(wall, 3))
            cpu[kind].append(round(used, 3))
        print("  rounds of 1,000: " + ", ".join(
            f"{k} {rounds[k][-1]:.2f} s ({cpu[k][-1]:.2f} s CPU)" for k in rounds), flush=True)
    args.rounds_cpu = cpu
    args.rounds_load.append(load_average())
    for kind in kinds:
        rows.append(measure(kind, args))
        if not args.no_save:
            save(args, rows, {}, rounds)
    print()
    for row in rows:
        t = row["per_thousand_s"]
        few, all_ = row[f"at_{args.few}"], row[f"at_{args.topics}"]
        print(f"{row['broker']:10} total {sum(t):7.2f} s; first thousand {t[0]:.2f} s, "
              f"second {t[1] if len(t) > 1 else float('nan'):.2f} s, last {t[-1]:.2f} s; "
              f"metadata {few['metadata_one_topic_ms']:.2f} -> "
              f"{all_['metadata_one_topic_ms']:.2f} ms, produce "
              f"{few['produce_one_record_ms']:.2f} -> {all_['produce_one_record_ms']:.2f} ms; "
              f"load {row['load_before']} -> {row['load_after']}")
    ratios = {}
    by = {r["broker"]: r for r in rows}
    for kind in ("kafkacore", "kafkacore-tmpfs"):
        if {kind, "tansu"} <= by.keys():
            ours, theirs = by[kind]["per_thousand_s"], by["tansu"]["per_thousand_s"]
            ratios[kind] = {
                "first_thousand": ours[0] / theirs[0],
                "thousand_in_rounds_median": (statistics.median(rounds[kind])
                                              / statistics.median(rounds["tansu"])),
                "cpu_per_thousand_median": (statistics.median(cpu[kind])
                                            / statistics.median(cpu["tansu"])),
                "all": sum(ours) / sum(theirs),
                "last_thousand": ours[-1] / theirs[-1],
            }
            print(f"{kind} / tansu: " + ", ".join(
                f"{k} x{v:.2f}" for k, v in ratios[kind].items()))
    if not args.no_save:
        save(args, rows, ratios, rounds)


def save(args: argparse.Namespace, rows: list[dict[str, Any]],
         ratios: dict[str, dict[str, float]],
         rounds: dict[str, list[float]]) -> None:
    """Write what is measured so far (a long run that fails late keeps its first rows)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "topics.json").write_text(json.dumps({
        "when": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, "
                   f"Python {platform.python_version()}",
        "topics": args.topics, "batch": args.batch, "few": args.few, "probes": args.probes,
        "rounds_of_a_thousand_s": rounds, "rounds_cpu_s": args.rounds_cpu,
        "rounds_load": args.rounds_load,
        "rows": rows, "ratios": ratios,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
