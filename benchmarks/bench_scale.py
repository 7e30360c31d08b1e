"""What our 3-broker cluster costs as partitions and connections grow, and what that says about
10,000 partitions and 1,000 connections.

A ``Cluster`` (a controller and three brokers, each its own process) gets topics of
``--per-topic`` partitions, replication factor 3, until it has each of ``--partitions`` in turn
(the counts grow, the cluster stays up).  At each count:

- the time to create the new partitions: the CreateTopics requests, then until a broker's
  Metadata shows every partition with its three replicas in sync;
- at rest, no client connected: every broker's CPU (utime + stime from ``/proc/PID/stat``) over
  ``--window`` seconds, its RSS, and the CPU of its ``ReplicaFetcherThread``s alone (their OS
  thread ids come from ``py-spy dump``, their CPU from ``/proc/PID/task/TID/stat``): followers
  fetch every partition they follow even when nothing is written, and that cost grows with the
  partitions;
- with each of ``--connections`` open: raw sockets, each sending ApiVersions and a Metadata
  request for one topic, then one 100-byte record every ``--interval`` seconds (acks=all) to the
  next partition, in turn, that the broker it is connected to leads, so the load is spread over
  every partition.  One thread drives them all with ``selectors``; it is one Python process
  standing for many clients, so no client object per connection is needed.  The same CPU, RSS
  and fetcher figures, the records acknowledged per second, and the p50/p99 time from a
  request's send to its response.

Before the connections, one record goes into every partition (see ``first_writes``), timed on
its own: a partition's first record under a leader epoch costs fsyncs that later ones do not.
Each figure is written with the load average beside it: the machine is shared.  Then linear
fits (least squares) of each figure against the partitions and the connections, and their
extrapolation to 10,000 partitions and 1,000 connections.

    python benchmarks/bench_scale.py [--partitions 100 1000 3000] [--connections 50 200 500]
                                     [--log-dir DIR]  # keep the brokers' logs
    python benchmarks/bench_scale.py --summarise      # fit again from the results file

writes ``benchmarks/results/scale.json`` (shown in docs/benchmarks.rst).

    python benchmarks/bench_scale.py --fetch-sessions [--partitions 1000] [--connections 50]

compares incremental fetch sessions on (Kafka's 1,000 cache slots) and off (0 slots: every
fetch is full), one cluster each, at the first ``--partitions`` count: at rest and with the first
``--connections`` count producing, the brokers' CPU per Fetch they answer and the bytes of the
followers' fetches (requests and responses, from the brokers' network counters, the clients'
own bytes taken out); writes ``benchmarks/results/fetch_sessions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import selectors
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).parent
RESULTS = HERE / "results"
TICK = os.sysconf("SC_CLK_TCK")
TARGET_PARTITIONS, TARGET_CONNECTIONS = 10_000, 1_000


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def cpu_s(path: str) -> float:
    """utime + stime of a process or thread, in seconds (0 if it is gone)."""
    try:
        with open(path) as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def fetcher_threads(pid: int) -> list[int]:
    """OS thread ids of a broker's ReplicaFetcherThreads (py-spy names Python's threads)."""
    spy = pathlib.Path(sys.executable).with_name("py-spy")
    tids: list[int] = []
    for _ in range(3):  # a dump of a process caught mid-change can come back empty: again
        try:
            out = subprocess.run([str(spy), "dump", "--nonblocking", "--pid", str(pid)],
                                 capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        tids = [int(tid) for tid, name in re.findall(r'Thread (\d+) \([^)]*\): "([^"]+)"', out)
                if name.startswith("ReplicaFetcherThread")]
        if len(tids) >= 2:  # one per other broker
            break
    return tids


class Sampler:
    """CPU of every broker and of its fetcher threads over a window, and RSS at its end."""

    def __init__(self, pids: dict[int, int]) -> None:
        self.pids = pids
        self.fetchers = {b: fetcher_threads(pid) for b, pid in pids.items()}

    def _cpu(self) -> dict[int, tuple[float, float]]:
        return {b: (cpu_s(f"/proc/{pid}/stat"),
                    sum(cpu_s(f"/proc/{pid}/task/{t}/stat") for t in self.fetchers[b]))
                for b, pid in self.pids.items()}

    def measure(self, window_s: float, during: Any = None) -> dict[str, Any]:
        load_before = load_average()
        before, t0 = self._cpu(), time.monotonic()
        extra: dict[str, Any] = {}
        if during is not None:
            extra = during(window_s)
        else:
            time.sleep(window_s)
        after, elapsed = self._cpu(), time.monotonic() - t0
        brokers = {
            str(b): {"cpu_pct": round(100 * (after[b][0] - before[b][0]) / elapsed, 1),
                     "fetcher_cpu_pct": round(100 * (after[b][1] - before[b][1]) / elapsed, 1),
                     "rss_mib": round(rss_mib(pid), 1)}
            for b, pid in self.pids.items()}
        return {"brokers": brokers,
                "cpu_pct_mean": round(statistics.fmean(v["cpu_pct"] for v in brokers.values()), 1),
                # over the brokers whose fetcher threads py-spy found
                "fetcher_cpu_pct_mean": round(statistics.fmean(
                    [brokers[str(b)]["fetcher_cpu_pct"] for b, t in self.fetchers.items() if t]
                    or [0.0]), 1),
                "rss_mib_mean": round(statistics.fmean(v["rss_mib"] for v in brokers.values()), 1),
                "fetcher_threads": {str(b): len(t) for b, t in self.fetchers.items()},
                "load": [load_before, load_average()], **extra}


class Admin:
    def __init__(self, host: str, port: int) -> None:
        from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient

        self.client = InterBrokerClient(host, port, "bench-scale", timeout_s=120.0)

    def create(self, names: list[str], partitions: int) -> list[str]:
        """The names not created because a broker was fenced (too few live brokers for RF 3);
        any other refusal raises."""
        from kafkacore.errors import Errors
        from kafkacore.protocol.api_keys import ApiKey

        body = self.client.send(ApiKey.CREATE_TOPICS, 5, {
            "topics": [{"name": n, "num_partitions": partitions, "replication_factor": 3,
                        "assignments": [], "configs": []} for n in names],
            "timeout_ms": 120_000, "validate_only": False})
        fenced = [t["name"] for t in body["topics"]
                  if t["error_code"] == Errors.INVALID_REPLICATION_FACTOR]
        failed = [t for t in body["topics"]
                  if t["error_code"] not in (Errors.NONE, Errors.INVALID_REPLICATION_FACTOR)]
        if failed:
            raise RuntimeError(f"{len(failed)} topics not created, e.g. {failed[0]}")
        return fenced

    def leaders(self, names: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (leader, in-sync replicas), for the partitions with a leader."""
        from kafkacore.protocol.api_keys import ApiKey

        body = self.client.send(ApiKey.METADATA, 9, {
            "topics": [{"name": n} for n in names], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})
        return {(t["name"], p["partition_index"]): (p["leader_id"], len(p["isr_nodes"]))
                for t in body["topics"] for p in t["partitions"] if p["leader_id"] >= 0}

    def close(self) -> None:
        self.client.close()


def first_writes(addresses: dict[int, tuple[str, int]],
                 led: dict[int, list[tuple[str, int]]], records: bytes) -> int:
    """One record into every partition, one Produce (acks=all) per leader naming all it leads.

    A partition's first record under its leader epoch writes its leader-epoch checkpoint, with
    two fsyncs, on the leader and on each follower; afterwards an append does not.  Doing it
    here keeps that one-off cost out of the steady load's figures and measures it on its own.
    Returns the partitions that did not take it."""
    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import Errors
    from kafkacore.protocol.api_keys import ApiKey

    failed = 0
    for broker, parts in led.items():
        by_topic: dict[str, list[int]] = {}
        for topic, index in parts:
            by_topic.setdefault(topic, []).append(index)
        client = InterBrokerClient(*addresses[broker], "bench-scale-warm", timeout_s=300.0)
        try:
            body = client.send(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": -1, "timeout_ms": 240_000,
                "topic_data": [{"name": t, "partition_data": [
                    {"index": i, "records": records} for i in indexes]}
                    for t, indexes in by_topic.items()]})
        finally:
            client.close()
        failed += sum(p["error_code"] != Errors.NONE for t in body["responses"]
                      for p in t["partition_responses"])
    return failed


def one_record() -> bytes:
    from kafkacore.core.memory_records_builder import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(1024)
    builder.append(int(time.time() * 1000), b"k", b"v" * 100)
    return bytes(builder.build())


class Connection:
    """One client's socket: its requests go out as frames, responses come back by correlation."""

    def __init__(self, address: tuple[str, int], topic: str) -> None:
        self.sock = socket.create_connection(address, timeout=30)
        self.sock.setblocking(False)
        self.topic = topic
        self.out = bytearray()
        self.inbuf = bytearray()
        self.correlation = 0
        self.sent: dict[int, tuple[int, float]] = {}  # correlation -> (api key, when sent)
        self.next_produce = 0.0

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        from kafkacore.protocol import codec

        self.correlation += 1
        payload = b"".join(bytes(c) for c in codec.encode_request(
            api_key, version, self.correlation, "bench-scale", body))
        self.out += len(payload).to_bytes(4, "big") + payload
        self.sent[self.correlation] = (api_key, time.monotonic())

    def frames(self) -> list[bytes]:
        got = []
        while len(self.inbuf) >= 4:
            size = int.from_bytes(self.inbuf[:4], "big")
            if len(self.inbuf) < 4 + size:
                break
            got.append(bytes(self.inbuf[4:4 + size]))
            del self.inbuf[:4 + size]
        return got


class Clients:
    """Many connections, one thread: each says hello (ApiVersions, Metadata), then produces one
    small record every ``interval`` seconds to the next partition its broker leads."""

    def __init__(self, addresses: dict[int, tuple[str, int]],
                 leaders: Any, interval_s: float) -> None:
        self.addresses = addresses
        self.leaders = leaders  # () -> {broker: [(topic, partition) it leads]}
        self.led = leaders()
        self.turn = dict.fromkeys(self.led, 0)
        self.refreshed = time.monotonic()
        self.refreshes = 0
        self.interval_s = interval_s
        self.selector = selectors.DefaultSelector()
        self.conns: list[tuple[int, Connection]] = []
        self.latencies: list[float] = []
        self.acked = 0
        self.errors = 0
        self.bytes = 0  # sent and received by all connections
        self.records = one_record()

    def open(self, count: int) -> None:
        from kafkacore.protocol.api_keys import ApiKey

        brokers = sorted(self.led)
        now = time.monotonic()
        while len(self.conns) < count:
            broker = brokers[len(self.conns) % len(brokers)]
            topic = self.led[broker][len(self.conns) % len(self.led[broker])][0]
            conn = Connection(self.addresses[broker], topic)
            conn.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "bench-scale",
                                                  "client_software_version": "1"})
            conn.request(ApiKey.METADATA, 9, {
                "topics": [{"name": topic}], "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False})
            # spread the produces over the interval, so the load is steady
            conn.next_produce = now + self.interval_s * (len(self.conns) % 97) / 97
            self.selector.register(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE,
                                   (broker, conn))
            self.conns.append((broker, conn))
            self.run(0.0)  # keep the earlier ones served while opening

    def close(self) -> None:
        for _, conn in self.conns:
            self.selector.unregister(conn.sock)
            conn.sock.close()
        self.conns.clear()

    def _produce(self, broker: int, conn: Connection) -> None:
        from kafkacore.protocol.api_keys import ApiKey

        parts = self.led[broker] or [p for ps in self.led.values() for p in ps]
        topic, index = parts[self.turn[broker] % len(parts)]
        self.turn[broker] += 1
        conn.request(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": index, "records": self.records}]}]})

    def _answer(self, conn: Connection, frame: bytes) -> None:
        from kafkacore.errors import Errors
        from kafkacore.protocol import codec
        from kafkacore.protocol.api_keys import ApiKey

        correlation = int.from_bytes(frame[:4], "big")
        api_key, sent = conn.sent.pop(correlation)
        if api_key != ApiKey.PRODUCE:
            return
        self.latencies.append(time.monotonic() - sent)
        _, body = codec.decode_response(api_key, 9, frame)
        p = body["responses"][0]["partition_responses"][0]
        if p["error_code"] == Errors.NONE:
            self.acked += 1
        else:
            self.errors += 1

    def run(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            if self.errors and now - self.refreshed > 1.0:
                # as a client does on NOT_LEADER_OR_FOLLOWER: ask where the leaders are now
                self.led, self.refreshed = self.leaders(), now
                self.refreshes += 1
            for broker, conn in self.conns:
                if now >= conn.next_produce and len(conn.sent) < 5:
                    self._produce(broker, conn)
                    conn.next_produce += self.interval_s
            for key, events in self.selector.select(timeout=0.01):
                broker, conn = key.data
                if events & selectors.EVENT_WRITE and conn.out:
                    sent = conn.sock.send(conn.out)
                    del conn.out[:sent]
                    self.bytes += sent
                if events & selectors.EVENT_READ:
                    data = conn.sock.recv(1 << 16)
                    if not data:
                        raise ConnectionError(f"broker {broker} closed a connection")
                    conn.inbuf += data
                    self.bytes += len(data)
                    for frame in conn.frames():
                        self._answer(conn, frame)
            if time.monotonic() >= end:
                return

    def window(self, seconds: float) -> dict[str, Any]:
        self.latencies.clear()
        self.acked = self.errors = self.refreshes = 0
        t0, c0 = time.monotonic(), time.process_time()
        self.run(seconds)
        elapsed = time.monotonic() - t0
        lat = sorted(self.latencies)
        return {"acked_per_s": round(self.acked / elapsed, 1), "errors": self.errors,
                "metadata_refreshes": self.refreshes,
                "p50_ms": round(1000 * lat[len(lat) // 2], 2) if lat else None,
                "p99_ms": round(1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2)
                if lat else None,
                "driver_cpu_pct": round(100 * (time.process_time() - c0) / elapsed, 1)}


def fit(xs: list[float], ys: list[float]) -> dict[str, float]:
    """Least squares y = a + b x, and the largest relative miss, to judge 'linear'."""
    a_b = statistics.linear_regression(xs, ys)
    # relative to the point, or to a hundredth of the largest (a point at 0 is no divisor)
    floor = max(max(abs(y) for y in ys) / 100, 1e-9)
    worst = max(abs(y - (a_b.intercept + a_b.slope * x)) / max(abs(y), floor)
                for x, y in zip(xs, ys, strict=True))
    return {"intercept": round(a_b.intercept, 4), "slope": a_b.slope, "worst_miss": round(worst, 3)}


def wait_in_sync(admin: Admin, names: list[str], partitions: int, bound_s: float) -> dict:
    deadline = time.monotonic() + bound_s
    while True:
        state = admin.leaders(names)
        if len(state) == partitions and all(isr == 3 for _, isr in state.values()):
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(state)} of {partitions} partitions led, "
                               f"{sum(isr == 3 for _, isr in state.values())} fully in sync")
        time.sleep(0.5)


def cluster_us_per_record(point: dict[str, Any], row: dict[str, Any]) -> float:
    """The three brokers' CPU above their rest, per record acknowledged, in µs."""
    return 3 * (row["cpu_pct_mean"] - point["rest"]["cpu_pct_mean"]) * 1e4 / max(
        row["acked_per_s"], 1e-9)


def summarise(points: list[dict[str, Any]], interval_s: float) -> tuple[dict, dict]:
    """Lines fitted against the partitions (and, at the most partitions, the connections), and
    where they reach at TARGET_PARTITIONS and TARGET_CONNECTIONS."""
    xs = [p["partitions"] for p in points]
    fits: dict[str, Any] = {"partitions": {k: fit(xs, [p["rest"][k] for p in points]) for k in
                                           ("cpu_pct_mean", "fetcher_cpu_pct_mean",
                                            "rss_mib_mean")}}
    fits["partitions"]["create_s_per_partition"] = fit(
        xs, [p["create_s"] / p["created"] for p in points])
    last = points[-1]
    cs = [0] + [r["connections"] for r in last["connections"]]
    rows = [last["rest"], *last["connections"]]
    fits["connections"] = {k: fit(cs, [r[k] for r in rows])
                           for k in ("cpu_pct_mean", "rss_mib_mean")}
    fp, fc = fits["partitions"], fits["connections"]

    def at(f: dict[str, float], x: float) -> float:
        return f["intercept"] + f["slope"] * x

    rest = at(fp["cpu_pct_mean"], TARGET_PARTITIONS)
    # A record's CPU is only measured where the cluster kept up with the offered load (95%):
    # where it did not, the brokers were at the CPU this shared machine gave them, and the
    # difference from rest says nothing.  Of those, the highest rate of each count (records
    # share fetch rounds as the rate grows); the dearest and the cheapest of them bound the
    # extrapolation: at a low rate every record pays its own fetch rounds (dear), at a high
    # one they share them (cheap), and a fetch costs more the more partitions there are.
    kept = {p["partitions"]: max(
        (r for r in p["connections"] if r["acked_per_s"] >= 0.95 * r["connections"] / interval_s),
        key=lambda r: r["connections"], default=None) for p in points}
    per_record = {n: round(cluster_us_per_record(p, kept[n]), 1)
                  for n, p in zip(kept, points, strict=True) if kept[n] is not None}
    us_per_record = max(per_record.values(), default=float("nan"))
    cheapest = min(per_record.values(), default=float("nan"))
    records_per_s = TARGET_CONNECTIONS / interval_s
    load = us_per_record * records_per_s / 1e4 / 3  # % of a core, per broker
    extrapolation = {
        "partitions": TARGET_PARTITIONS, "connections": TARGET_CONNECTIONS,
        "records_per_s": records_per_s,
        "fetcher_cpu_pct_per_broker": round(at(fp["fetcher_cpu_pct_mean"], TARGET_PARTITIONS), 1),
        "rest_cpu_pct_per_broker": round(rest, 1),
        "cluster_us_per_record": round(us_per_record, 1),
        "cluster_us_per_record_measured": {str(n): v for n, v in per_record.items()},
        "kept_up_at": [n for n in kept if kept[n] is not None],
        "fell_behind": [[p["partitions"], r["connections"], r["acked_per_s"]]
                        for p in points for r in p["connections"]
                        if r["acked_per_s"] < 0.95 * r["connections"] / interval_s],
        "cpu_pct_per_broker": round(rest + load, 1),
        "cluster_us_per_record_cheapest": round(cheapest, 1),
        "cpu_pct_per_broker_cheapest": round(rest + cheapest * records_per_s / 1e4 / 3, 1),
        "rss_mib_per_broker": round(at(fp["rss_mib_mean"], TARGET_PARTITIONS)
                                    + fc["rss_mib_mean"]["slope"] * TARGET_CONNECTIONS, 1),
        # from none: a partition costs more the more there are, so the sum of the line
        "create_s": round(fp["create_s_per_partition"]["intercept"] * TARGET_PARTITIONS
                          + fp["create_s_per_partition"]["slope"] * TARGET_PARTITIONS ** 2 / 2, 1),
    }
    return fits, extrapolation


def create_all(admin: Admin, names: list[str], partitions: int) -> None:
    """Create ``names``, again while a fenced broker makes RF 3 impossible (a bounded wait)."""
    deadline = time.monotonic() + 120
    while todo := admin.create(names, partitions):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(todo)} topics refused for 120 s: a broker stays fenced")
        names = todo
        time.sleep(1.0)


def fetch_window(cluster: Any, sampler: Sampler, window_s: float,
                 clients: Clients | None) -> dict[str, Any]:
    """The brokers' CPU over ``window_s`` (Sampler), per Fetch request they answered, and the
    follower fetch bytes: all bytes their sockets moved but the clients' own."""
    brokers = sorted(sampler.pids)

    def counters() -> dict[str, float]:
        stats = [cluster.statistics(b) for b in brokers]
        return {"fetches": sum(s["network"].get("requests.api_key.1", 0) for s in stats),
                "bytes": sum(s["network"].get("bytes_read", 0)
                             + s["network"].get("bytes_written", 0) for s in stats),
                **{k: sum(s["fetch_sessions"][k] for s in stats)
                   for k in ("full_fetches", "incremental_fetches", "sessionless_fetches",
                             "incremental_partitions_named")},
                "client_bytes": clients.bytes if clients is not None else 0}

    before, t0 = counters(), time.monotonic()
    row = sampler.measure(window_s, clients.window if clients is not None else None)
    after, elapsed = counters(), time.monotonic() - t0
    d = {k: after[k] - before[k] for k in before}
    fetches = max(d["fetches"], 1)
    cpu_s = sum(b["cpu_pct"] for b in row["brokers"].values()) / 100 * elapsed
    fetch_bytes = d["bytes"] - d["client_bytes"]
    return {**row, **{k: int(v) for k, v in d.items()},
            "fetches_per_s": round(d["fetches"] / elapsed, 1),
            "broker_cpu_ms_per_fetch": round(1000 * cpu_s / fetches, 2),
            "fetch_bytes_per_s": round(fetch_bytes / elapsed),
            "bytes_per_fetch": round(fetch_bytes / fetches)}


def compare_fetch_sessions(args: argparse.Namespace) -> None:
    from kafkacore.testing.cluster import Cluster

    total, connections = args.partitions[0], args.connections[0]
    names = [f"scale-{i}" for i in range(total // args.per_topic)]
    runs: dict[str, Any] = {}
    for label, slots in (("sessions", 1000), ("no_sessions", 0)):
        # One controller, as the figures in docs/benchmarks.rst were measured (the quorum's
        # are bench_quorum_scale's).
        with Cluster(brokers=3, log_dir=args.log_dir, controllers=1, config={
                "broker.session.timeout.ms": 9000,
                "max.incremental.fetch.session.cache.slots": slots}) as cluster:
            addresses = {b: ("127.0.0.1", n.port) for b, n in cluster.brokers.items()}
            admin = Admin(*addresses[1])
            for i in range(0, len(names), args.batch):
                create_all(admin, names[i:i + args.batch], args.per_topic)
            wait_in_sync(admin, names, total, 600)

            def leaders(admin: Admin = admin, addresses: dict[int, Any] = addresses
                        ) -> dict[int, list[tuple[str, int]]]:
                led: dict[int, list[tuple[str, int]]] = {b: [] for b in addresses}
                for key, (leader, _) in sorted(admin.leaders(names).items()):
                    led[leader].append(key)
                return led

            first_writes(addresses, leaders(), one_record())
            sampler = Sampler({b: pid for b, pid in cluster.pids.items() if b in cluster.brokers})
            time.sleep(2.0)  # the fetchers settle
            run = runs[label] = {"slots": slots,
                                 "rest": fetch_window(cluster, sampler, args.window, None)}
            print(f"{label}: at rest {run['rest']}", flush=True)
            clients = Clients(addresses, leaders, args.interval)
            try:
                clients.open(connections)
                clients.run(2.0)
                run["load"] = {"connections": connections,
                               **fetch_window(cluster, sampler, args.window, clients)}
            finally:
                clients.close()
            print(f"{label}: {connections} connections {run['load']}", flush=True)
            admin.close()
    ratios = {state: {k: round(runs["sessions"][state][k] / max(runs["no_sessions"][state][k],
                                                               1e-9), 3)
                      for k in ("broker_cpu_ms_per_fetch", "bytes_per_fetch",
                                "fetch_bytes_per_s", "cpu_pct_mean", "fetcher_cpu_pct_mean")}
              for state in ("rest", "load")}
    data = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
            "partitions": total, "per_topic": args.per_topic, "window_s": args.window,
            "interval_s": args.interval, "runs": runs, "sessions_over_no_sessions": ratios}
    (RESULTS / "fetch_sessions.json").write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(ratios, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--connections", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--per-topic", type=int, default=100, help="partitions per topic")
    parser.add_argument("--batch", type=int, default=1, help="topics per CreateTopics request")
    parser.add_argument("--log-dir", default=None,
                        help="keep the cluster's logs and data here (default: a temporary dir)")
    parser.add_argument("--window", type=float, default=6.0, help="seconds of each measurement")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds between one connection's produces")
    parser.add_argument("--out", default=str(RESULTS / "scale.json"))
    parser.add_argument("--summarise", action="store_true",
                        help="only fit and extrapolate again from the points in --out")
    parser.add_argument("--fetch-sessions", action="store_true",
                        help="compare incremental fetch sessions on and off instead")
    parser.add_argument("--session-slots", type=int, default=1000,
                        help="max.incremental.fetch.session.cache.slots of the brokers (Kafka's"
                             " 1,000; 0: every follower fetch is full)")
    args = parser.parse_args()
    if args.fetch_sessions:
        compare_fetch_sessions(args)
        return
    if args.summarise:
        path = pathlib.Path(args.out)
        data = json.loads(path.read_text())
        data["fits"], data["extrapolation"] = summarise(data["points"], data["interval_s"])
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(json.dumps(data["extrapolation"], indent=1))
        return

    from kafkacore.testing.cluster import Cluster

    started = time.monotonic()
    points: list[dict[str, Any]] = []
    # Kafka's broker.session.timeout.ms (the Cluster's 2 s for tests fences brokers whenever
    # this shared machine stalls one, and their leaders move)
    # One controller, as the figures in docs/benchmarks.rst were measured (the quorum's are
    # bench_quorum_scale's).
    with Cluster(brokers=3, log_dir=args.log_dir, controllers=1,
                 config={"broker.session.timeout.ms": 9000,
                         "max.incremental.fetch.session.cache.slots": args.session_slots}
                 ) as cluster:
        addresses = {b: ("127.0.0.1", n.port) for b, n in cluster.brokers.items()}
        admin = Admin(*addresses[1])
        names: list[str] = []
        for total in args.partitions:
            new = [f"scale-{i}" for i in range(len(names), total // args.per_topic)]
            load = load_average()
            t0 = time.monotonic()
            refused = 0  # topics refused while a broker was fenced, created again once it is back
            for i in range(0, len(new), args.batch):
                todo = new[i:i + args.batch]
                deadline = time.monotonic() + 120
                while todo := admin.create(todo, args.per_topic):
                    refused += len(todo)
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{len(todo)} topics refused for 120 s: a broker "
                                           f"stays fenced")
                    time.sleep(1.0)
            requests_s = time.monotonic() - t0
            names += new
            state = wait_in_sync(admin, names, len(names) * args.per_topic, 600)
            create_s = time.monotonic() - t0
            print(f"{total} partitions: created {len(new) * args.per_topic} in {create_s:.1f} s"
                  f" (requests {requests_s:.1f} s, {refused} topics refused: a broker fenced),"
                  f" load {load}", flush=True)
            pids = {b: pid for b, pid in cluster.pids.items() if b in cluster.brokers}
            sampler = Sampler(pids)
            time.sleep(2.0)  # the fetchers settle on the new partitions
            point: dict[str, Any] = {
                "partitions": len(names) * args.per_topic,
                "created": len(new) * args.per_topic, "create_s": round(create_s, 2),
                "create_requests_s": round(requests_s, 2), "create_load": load,
                "create_refused_fenced": refused,
                "rest": sampler.measure(args.window), "connections": []}
            print(f"  at rest: {point['rest']}", flush=True)
            def leaders(topics: list[str] = names) -> dict[int, list[tuple[str, int]]]:
                led: dict[int, list[tuple[str, int]]] = {b: [] for b in addresses}
                for key, (leader, _) in sorted(admin.leaders(topics).items()):
                    led[leader].append(key)
                return led

            first = state
            t1 = time.monotonic()
            not_written = first_writes(addresses, leaders(), one_record())
            point["first_write_s"] = round(time.monotonic() - t1, 2)
            point["first_write_failed"] = not_written
            print(f"  one record into each partition: {point['first_write_s']} s,"
                  f" {not_written} failed", flush=True)
            clients = Clients(addresses, leaders, args.interval)
            try:
                for count in args.connections:
                    clients.open(count)
                    clients.run(2.0)
                    row = {"connections": count, **sampler.measure(args.window, clients.window)}
                    print(f"  {count} connections: {row}", flush=True)
                    point["connections"].append(row)
            finally:
                clients.close()
            now = admin.leaders(names)
            point["leaders_moved"] = sum(now.get(k, (-1,))[0] != v[0] for k, v in first.items())
            point["not_fully_in_sync"] = sum(isr < 3 for _, isr in now.values())
            print(f"  leaders moved {point['leaders_moved']}, not in sync "
                  f"{point['not_fully_in_sync']}", flush=True)
            points.append(point)
        admin.close()

    # a line needs two points
    fits, extrapolation = summarise(points, args.interval) if len(points) > 1 else ({}, {})
    data = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "per_topic": args.per_topic, "window_s": args.window, "interval_s": args.interval,
        "record_bytes": 100, "fetch_session_cache_slots": args.session_slots, "points": points, "fits": fits, "extrapolation": extrapolation,
        "run_s": round(time.monotonic() - started, 1),
    }
    pathlib.Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps({"fits": fits, "extrapolation": extrapolation}, indent=1))


if __name__ == "__main__":
    main()
