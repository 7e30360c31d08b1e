"""10,000 partitions in 1,000 topics on three brokers, the controllers a three-voter Raft quorum
(issue 40): what creating them costs, how long until every broker knows them, the memory of
each process, and what one ``PartitionChangeRecord`` costs as the image grows.

**The cluster** (``Cluster(brokers=3, controllers=3)``, each node its own process): ``--topics``
topics of ``--partitions-per-topic`` partitions, replication factor 3, in CreateTopics requests of
``--batch`` topics sent one after another to broker 1 (which forwards them to the active
controller).  Measured:

- the creation time, from the first request to the last answer, and each request's time (a
  request that took longer the more topics there were would show in the later ones);
- propagation, per broker: one thread per broker asks that broker (its own connection, its own
  Metadata answer) for the topics of each answered request until it lists each of their
  partitions with a leader, so each request has a lag from its answer to each broker; then for
  every topic at once, until the broker lists all partitions with a leader (``all_led_s``, from
  the first request).  A lag is an upper bound: the watcher asks again every 20 ms or so;
- the logs each broker holds on disk: listed is not created (a broker that could not create a
  partition's log may still list it); if some are missing, what each broker lacks and does not
  list, and the error a produce to the last topic gets (``incomplete``);
- then, if none is missing, until every partition has its three replicas in sync (asked of
  broker 1);
- the RSS (``VmRSS`` of ``/proc/PID/status``) of each broker and controller at the start, once
  every broker lists every partition, and once all are in sync;
- the quorum (each controller's epoch, leader, end offset) before and after: a failover during
  the run shows as a new epoch.

**The image**, in this process, against the real code: a lone ``QuorumController`` (the
controller's state, its records and its replay) and a standalone ``Broker`` whose
``MetadataLoader`` is handed records directly (``new_metadata_loader(None)``, as the loader's
own test does), grown to each of ``--image-sizes`` partitions (the same topics, created by the
controller's ``create_topic``).  At each size, timed one at a time with ``perf_counter_ns``
(medians of ``--repetitions``), an ISR change of a partition (shrink to two replicas, then back
to three, round the topics):

- ``controller_replay``: one committed ``PartitionChangeRecord`` decoded and replayed into the
  controller's state, what each controller's replayer does for each entry of the quorum's log;
- ``controller_alter_partition``: the active controller deciding a leader's AlterPartition and
  making its record (``alter_partition`` inside an open ``batch()``, so the log's write and
  fsync, the same whatever the image, are left out: they are one append at the batch's end);
- ``broker_apply``: the broker's ``MetadataLoader.handle_commit`` of that one record: replayed
  into the broker's image and published to its metadata cache and ``ReplicaManager`` (for the
  broker to lead every partition it hosts, its records name it leader; in the cluster a broker
  leads a third and follows the rest), with ``examined``, the partitions the replica manager
  looked at for it (``ReplicaManager.last_apply_examined``).  A broker holds a log per
  partition it hosts, and one process's descriptors allow ``log_budget`` of them (7,500 here):
  past ``hosted_limit`` (the budget less 500) the broker's image still gets every partition,
  but those beyond it name a fourth broker's replicas, not this one's (``hosted``: the
  partitions it holds); the changes measured are of partitions it hosts.

At the largest size a cProfile of ``broker_apply`` says where its time goes.  Beside every
figure the load average: the machine is shared (two cores).

    python benchmarks/bench_quorum_scale.py [--topics 1000] [--partitions-per-topic 10]
        [--batch 50] [--image-sizes 1000 3000 10000] [--repetitions 500]
        [--bound 900] [--log-dir DIR] [--no-cluster] [--no-image]

writes ``benchmarks/results/quorum_scale.json`` (shown in docs/benchmarks.rst and
docs/broker/quorum.rst), which keeps one cluster run per partition count (``cluster.<count>``)
and the latest image.  If the cluster cannot do it, the run says how far it got and what broke
(``failed``: the stage, the error, the logs on disk, what each broker does not list), with the
last warnings of each node's log.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pathlib
import platform
import pstats
import re
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from bench_scale import Admin, create_all, load_average, rss_mib, wait_in_sync  # noqa: E402

RESULTS = HERE / "results"
PARTITION_DIR = re.compile(r"^qscale-\d+-\d+$")
#: how long the watchers and the in-sync wait may take, each (--bound)
BOUND_S = 900.0
POLL_S = 0.02


# -- the cluster -----------------------------------------------------------------------------------


class Watcher(threading.Thread):
    """Asks one broker, over its own connection, for the topics of each answered CreateTopics
    request until it lists all their partitions with a leader, then for every topic."""

    def __init__(self, broker: int, address: tuple[str, int], batches: list[list[str]],
                 answered: list[float], per_topic: int, stop: threading.Event,
                 bound_s: float) -> None:
        super().__init__(name=f"watch-broker-{broker}", daemon=True)
        self.broker, self.address = broker, address
        self.batches, self.answered = batches, answered
        self.per_topic, self.stop, self.bound_s = per_topic, stop, bound_s
        #: when this broker first listed each batch's partitions all led
        self.seen: list[float] = []
        self.all_led_at: float | None = None
        self.all_led_load: float | None = None
        self.full_metadata_s: float | None = None
        self.polls = 0
        self.error: str | None = None

    def run(self) -> None:
        admin = None
        try:
            admin = Admin(*self.address)
            deadline = time.monotonic() + self.bound_s
            for names in self.batches:
                while not self.stop.is_set():
                    if len(self.answered) > len(self.seen):
                        self.polls += 1
                        if len(admin.leaders(names)) == len(names) * self.per_topic:
                            self.seen.append(time.monotonic())
                            break
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"batch {len(self.seen)} not all led in "
                                           f"{self.bound_s} s")
                    time.sleep(POLL_S)
                if self.stop.is_set():
                    return
            every = [n for names in self.batches for n in names]
            while not self.stop.is_set():
                t = time.monotonic()
                led = len(admin.leaders(every))
                took = time.monotonic() - t
                if led == len(every) * self.per_topic:
                    self.all_led_at, self.full_metadata_s = time.monotonic(), took
                    self.all_led_load = load_average()
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{led} of {len(every) * self.per_topic} partitions led "
                                       f"after {self.bound_s} s")
                time.sleep(POLL_S)
        except Exception as exc:  # kept for the report: a watcher that failed is a finding
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            if admin is not None:
                admin.close()


def rss_all(cluster: Any) -> dict[str, float]:
    """VmRSS in MiB of every running node, as ``broker-1`` and ``controller-3000``."""
    out = {}
    for node_id, pid in sorted(cluster.pids.items()):
        role = "controller" if node_id in cluster.controllers else "broker"
        try:
            out[f"{role}-{node_id}"] = round(rss_mib(pid), 1)
        except OSError:
            out[f"{role}-{node_id}"] = float("nan")  # it died meanwhile
    return out


def quorum(cluster: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in cluster.controllers:
        try:
            s = cluster.quorum_status(c)
            out[str(c)] = {k: s.get(k) for k in ("epoch", "leader_id", "end_offset",
                                                  "high_watermark")}
        except Exception as exc:  # a controller that does not answer is what we report
            out[str(c)] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def log_findings(cluster: Any) -> dict[str, Any]:
    """Per node: how many WARNING and ERROR lines its log has, and the last three."""
    out: dict[str, Any] = {}
    nodes = [*cluster.controllers.values(), *cluster.brokers.values()]
    for node in nodes:
        path = pathlib.Path(cluster.base) / f"{node.role}-{node.node_id}.log"
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        bad = [line for line in lines if " WARNING " in line or " ERROR " in line
               or "Traceback" in line]
        out[f"{node.role}-{node.node_id}"] = {
            "running": node.running, "warnings_and_errors": len(bad),
            "last": [line[:300] for line in bad[-3:]]}
    return out


def logs_on_disk(cluster: Any) -> dict[str, int]:
    """Per broker, the partition directories (its logs) of the benchmark's topics."""
    return {str(b): sum(1 for d in pathlib.Path(node.directory).iterdir()
                        if d.is_dir() and PARTITION_DIR.match(d.name))
            for b, node in cluster.brokers.items()}


def produce_error(address: tuple[str, int], topic: str, partition: int) -> str:
    """The error of one record produced (acks=1) to ``topic``-``partition`` at ``address``."""
    from bench_scale import one_record

    from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
    from kafkacore.errors import Errors
    from kafkacore.protocol.api_keys import ApiKey

    client = InterBrokerClient(*address, "bench-quorum-scale", timeout_s=30.0)
    try:
        body = client.send(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": 1, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": one_record()}]}]})
    finally:
        client.close()
    return Errors(body["responses"][0]["partition_responses"][0]["error_code"]).name


def what_is_missing(cluster: Any, names: list[str], per_topic: int) -> dict[str, Any]:
    """Per broker, the logs it lacks and the partitions its Metadata does not list with a
    leader; and a produce to the last topic's partition 0 at the leader the active controller
    names, with the error it gets."""
    total = len(names) * per_topic
    out: dict[str, Any] = {"logs_on_disk": logs_on_disk(cluster), "not_listed": {}}
    for b, node in cluster.brokers.items():
        admin = Admin("127.0.0.1", node.port)
        try:
            led = admin.leaders(names)
        finally:
            admin.close()
        missing = sorted({t for t, _ in {(t, i) for t in names for i in range(per_topic)}
                          - led.keys()}, key=lambda t: int(t.rpartition("-")[2]))
        out["not_listed"][str(b)] = {
            "partitions": total - len(led),
            "topics": f"{missing[0]} .. {missing[-1]} ({len(missing)})" if missing else ""}
    last = names[-1]
    # (the controller answers with its whole image, whatever topics are named)
    parts = [p for t in cluster.metadata([last])["topics"] if t["name"] == last
             for p in t["partitions"]]
    leader = next((p["leader_id"] for p in parts if p["partition_index"] == 0), -1)
    out["probe"] = {"partition": f"{last}-0", "leader_by_controller": leader,
                    "produce_error": produce_error(("127.0.0.1", cluster.brokers[leader].port),
                                                   last, 0)
                    if leader in cluster.brokers else None}
    return out


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    tenth = max(1, len(ordered) // 10)
    return {"median": round(statistics.median(values), 3),
            "p90": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 3),
            "max": round(ordered[-1], 3),
            # the first and the last tenth of the requests, in order: a lag that grew with the
            # topics already there would show here
            "first_tenth_median": round(statistics.median(values[:tenth]), 3),
            "last_tenth_median": round(statistics.median(values[-tenth:]), 3)}


def run_cluster(args: argparse.Namespace) -> dict[str, Any]:
    from kafkacore.testing.cluster import Cluster

    per_topic = args.partitions_per_topic
    names = [f"qscale-{i}" for i in range(args.topics)]
    batches = [names[i:i + args.batch] for i in range(0, len(names), args.batch)]
    total = len(names) * per_topic
    out: dict[str, Any] = {"failed": None}
    # Kafka's broker.session.timeout.ms (the Cluster's 2 s for tests fences brokers whenever
    # this shared machine stalls one); the quorum keeps Kafka's timeouts.
    cluster = Cluster(brokers=3, controllers=3, log_dir=args.log_dir,
                      config={"broker.session.timeout.ms": 9000})
    answered: list[float] = []
    rows: list[dict[str, Any]] = []
    stop = threading.Event()
    watchers: list[Watcher] = []
    admin = None
    t0 = time.monotonic()
    stage = "starting the cluster"
    try:
        load = load_average()
        cluster.start()
        out["start_s"], out["start_load"] = round(time.monotonic() - t0, 2), load
        out["active_controller_before"] = cluster.active_controller()
        out["quorum_before"] = quorum(cluster)
        out["rss_mib"] = {"start": rss_all(cluster), "start_load": load_average()}
        addresses = {b: ("127.0.0.1", n.port) for b, n in cluster.brokers.items()}
        admin = Admin(*addresses[1])
        watchers = [Watcher(b, a, batches, answered, per_topic, stop, args.bound)
                    for b, a in addresses.items()]
        stage = "creating the topics"
        load = load_average()
        t0 = time.monotonic()
        for w in watchers:
            w.start()
        for i, batch in enumerate(batches):
            tb = time.monotonic()
            create_all(admin, batch, per_topic)
            answered.append(time.monotonic())
            rows.append({"topics_before": i * args.batch, "s": round(answered[-1] - tb, 3),
                         "load": load_average()})
            if i % 5 == 4 or i == len(batches) - 1:
                print(f"  {len(answered) * args.batch} topics answered, "
                      f"{answered[-1] - t0:.1f} s, load {rows[-1]['load']}", flush=True)
        out["create"] = {"s": round(answered[-1] - t0, 2), "requests": len(batches),
                         "load": [load, load_average()],
                         "request_s": spread([r["s"] for r in rows]), "requests_each": rows}
        print(f"created {total} partitions in {out['create']['s']} s "
              f"(load {out['create']['load']})", flush=True)
        stage = "waiting for every broker to list every partition with a leader"
        for w in watchers:
            w.join(args.bound + 60)
        out["propagation"] = {}
        for w in watchers:
            lags = [s - a for s, a in zip(w.seen, answered, strict=False)]
            out["propagation"][str(w.broker)] = {
                "all_led_s": None if w.all_led_at is None else round(w.all_led_at - t0, 2),
                "after_last_answer_s": None if w.all_led_at is None
                else round(w.all_led_at - answered[-1], 2),
                "full_metadata_request_s": None if w.full_metadata_s is None
                else round(w.full_metadata_s, 3),
                "load": w.all_led_load, "request_lag_s": spread(lags), "polls": w.polls,
                "error": w.error}
            print(f"  broker {w.broker}: {out['propagation'][str(w.broker)]}", flush=True)
        failed = [w for w in watchers if w.error is not None or w.all_led_at is None]
        if failed:
            raise RuntimeError("; ".join(f"broker {w.broker}: {w.error or 'did not finish'}"
                                         for w in failed))
        out["rss_mib"]["all_led"] = rss_all(cluster)
        out["rss_mib"]["all_led_load"] = load_average()
        # Listed is not created: a broker that could not create a partition's log still
        # lists the partition (its image has it); count the logs each broker holds.
        out["logs_on_disk"] = logs_on_disk(cluster)
        print(f"logs on disk: {out['logs_on_disk']} of {total} each", flush=True)
        if any(n < total for n in out["logs_on_disk"].values()):
            out["incomplete"] = what_is_missing(cluster, names, per_topic)
            print(f"INCOMPLETE: {out['incomplete']}", flush=True)
            time.sleep(10.0)  # no in-sync wait: some replicas do not exist
            out["rss_mib"]["settled"] = rss_all(cluster)
            out["rss_mib"]["settled_load"] = load_average()
        else:
            stage = "waiting for every partition to have three replicas in sync"
            wait_in_sync(admin, names, total, args.bound)
            out["in_sync_s"] = round(time.monotonic() - t0, 2)
            out["in_sync_load"] = load_average()
            out["rss_mib"]["in_sync"] = rss_all(cluster)
            out["rss_mib"]["in_sync_load"] = load_average()
            print(f"all in sync at {out['in_sync_s']} s; RSS {out['rss_mib']}", flush=True)
        out["active_controller_after"] = cluster.active_controller()
        out["quorum_after"] = quorum(cluster)
    except Exception as exc:  # how far it got and what broke is the result then
        out["failed"] = {"stage": stage, "error": f"{type(exc).__name__}: {exc}",
                         "elapsed_s": round(time.monotonic() - t0, 1),
                         "topics_answered": min(len(answered) * args.batch, len(names)),
                         "requests_each": rows, "load": load_average()}
        print(f"FAILED while {stage}: {out['failed']['error']}", flush=True)
        try:
            out["failed"]["rss_mib"] = rss_all(cluster)
            out["failed"]["rss_load"] = load_average()
            out["failed"]["quorum"] = quorum(cluster)
            out["failed"].update(what_is_missing(cluster, names, per_topic))
            print(f"  {out['failed']}", flush=True)
        except Exception as more:  # noqa: BLE001 - the cluster may be gone: say so
            out["failed"]["cluster"] = f"{type(more).__name__}: {more}"
    finally:
        stop.set()
        for w in watchers:
            w.join(30)
        if admin is not None:
            admin.close()
        if cluster.base is not None:
            out["logs"] = log_findings(cluster)
        cluster.close()
    return out


# -- the image -------------------------------------------------------------------------------------


def timed(act: Any, prepare: Any, reps: int) -> dict[str, float]:
    """``act(prepare(i))`` for i in 0..reps-1, each ``act`` timed alone (``prepare`` is not):
    µs, the median, p90 and mean."""
    for i in range(min(20, reps)):  # warm
        act(prepare(i))
    ns = []
    for i in range(reps):
        arg = prepare(i)
        t = time.perf_counter_ns()
        act(arg)
        ns.append(time.perf_counter_ns() - t)
    ns.sort()
    return {"median_us": round(ns[len(ns) // 2] / 1000, 2),
            "p90_us": round(ns[int(len(ns) * 0.9)] / 1000, 2),
            "mean_us": round(statistics.fmean(ns) / 1000, 2)}


class Image:
    """A lone ``QuorumController`` and a standalone ``Broker``'s ``MetadataLoader`` holding the
    same topics, grown by :meth:`grow`; :meth:`measure` times one ISR change in each."""

    def __init__(self, work: pathlib.Path, per_topic: int, hosted_limit: int) -> None:
        from kafkacore.broker import Broker
        from kafkacore.broker.config.kafka_config import BrokerConfig
        from kafkacore.broker.controller.quorum_controller import QuorumController

        self.per_topic, self.me = per_topic, 1
        self.controller = QuorumController(BrokerConfig({"log.dirs": str(work / "controller"),
                                                         "node.id": 0}))
        self.broker = Broker({"log.dirs": str(work / "broker"), "node.id": self.me}).start()
        self.loader = self.broker.new_metadata_loader(None)  # records handed in: no pulls
        #: the partitions this broker may host (its descriptor budget, less a margin)
        self.hosted_limit = hosted_limit
        #: how many of the broker's topics it hosts (the first ones)
        self.hosted_topics = 0
        # The controller places replicas on brokers 1 to 3; broker 4 is known to the broker
        # only, for the partitions it does not host.
        for b in (1, 2, 3, 4):
            epoch = self.controller.register_broker(b, "127.0.0.1", 9000 + b, f"bench-{b}") \
                if b < 4 else 4
            self.loader.handle_commit([{"type": "RegisterBrokerRecord", "broker_id": b,
                                        "broker_epoch": epoch, "host": "127.0.0.1",
                                        "port": 9000 + b}])
        #: the controller's TopicControlInfo of each topic, in order
        self.topics: list[Any] = []
        #: how many of them the broker has (the first ones)
        self.broker_topics = 0
        #: (topic, partition) -> (ISR, partition epoch) as the broker's records last said
        self.broker_state: dict[tuple[str, int], tuple[list[int], int]] = {}
        self.last_record: dict[str, Any] = {}

    def close(self) -> None:
        self.broker.stop()
        self.controller.shutdown()
        self.controller.metadata_log.close()

    def grow(self, partitions: int, with_broker: bool) -> tuple[float, float | None]:
        """Topics created by the controller (``create_topic``, 50 to a batch, as CreateTopics
        requests, replication factor 3 over brokers 1 to 3) until there are ``partitions``,
        then handed to the broker's loader, one batch's records at a time, as a pull brings
        them (unless ``with_broker`` is false: then the broker stays as it was, and is measured
        no more); past ``hosted_limit`` the broker's records name brokers 2 to 4 as the
        replicas.  (controller s, broker s)"""
        from kafkacore.broker.controller.quorum_controller import partition_record
        from kafkacore.errors import Errors

        want = partitions // self.per_topic
        t = time.monotonic()
        new = []
        for first in range(len(self.topics), want, 50):
            with self.controller.batch():
                for k in range(first, min(first + 50, want)):
                    error, message, info = self.controller.create_topic(
                        f"qscale-{k}", self.per_topic, 3, {})
                    if error != Errors.NONE or info is None:
                        raise RuntimeError(f"the controller refused qscale-{k}: {message}")
                    new.append(info)
        controller_s = time.monotonic() - t
        self.topics += new
        if not with_broker:
            return controller_s, None
        new = self.topics[self.broker_topics:]
        t = time.monotonic()
        for first in range(0, len(new), 50):
            records: list[dict[str, Any]] = []
            for info in new[first:first + 50]:
                records.append({"type": "TopicRecord", "name": info.name,
                                "topic_id": info.topic_id})
                hosted = (self.hosted_topics + 1) * self.per_topic <= self.hosted_limit
                self.hosted_topics += hosted
                for i in range(self.per_topic):
                    r = partition_record("PartitionRecord", info, i)
                    if hosted:  # this broker leads all it hosts: no fetchers to start
                        r["leader"] = self.me
                    else:  # beyond its descriptors: in its image, on three other brokers
                        r.update(leader=2, replicas=[2, 3, 4], isr=[2, 3, 4])
                    records.append(r)
            self.loader.handle_commit(records)
        broker_s = time.monotonic() - t
        self.broker_topics = len(self.topics)
        held = len(self.broker.replica_manager.partitions)
        if held != self.hosted_topics * self.per_topic:
            raise RuntimeError(f"the broker has {held} partitions, not "
                               f"{self.hosted_topics * self.per_topic}")
        return controller_s, broker_s

    def _change(self, i: int, among: int = 0) -> tuple[Any, int, list[int]]:
        """The i-th change: a partition of another topic (of the first ``among``; 0: of all)
        each time; its ISR two replicas if the controller has three, three if two."""
        info = self.topics[(i * 7919) % (among or len(self.topics))]
        index = i % self.per_topic
        p = info.partitions[index]
        return info, index, p.isr[:2] if len(p.isr) == 3 else list(p.replicas)

    def replay_entry(self, i: int) -> bytes:
        """A committed PartitionChangeRecord, as the quorum's log holds it."""
        from kafkacore.broker.controller.quorum_controller import partition_record

        info, index, isr = self._change(i)
        r = partition_record("PartitionChangeRecord", info, index)
        r.update(isr=isr, partition_epoch=r["partition_epoch"] + 1)
        return json.dumps(r).encode()

    def replay(self, entry: bytes) -> None:
        """What a controller's replayer does for each entry of the quorum's log."""
        self.controller._replay(json.loads(entry))

    def alter_request(self, i: int) -> tuple[Any, ...]:
        info, index, isr = self._change(i)
        p = info.partitions[index]
        return p.leader, uuid.UUID(info.topic_id), index, p.leader_epoch, isr, p.partition_epoch

    def alter(self, request: tuple[Any, ...]) -> None:
        from kafkacore.errors import Errors

        error, _ = self.controller.alter_partition(*request)
        if error != Errors.NONE:
            raise RuntimeError(f"alter_partition refused: error {error}")

    def broker_records(self, i: int) -> list[dict[str, Any]]:
        """One pull's records: one PartitionChangeRecord, this broker still the leader."""
        info, index, _ = self._change(i, self.hosted_topics)
        p = info.partitions[index]
        isr, epoch = self.broker_state.get((info.name, index),
                                           (list(p.replicas), p.partition_epoch))
        isr = isr[:2] if len(isr) == 3 else list(p.replicas)
        self.broker_state[(info.name, index)] = isr, epoch + 1
        self.last_record = {
            "type": "PartitionChangeRecord", "topic_id": info.topic_id, "partition_id": index,
            "replicas": list(p.replicas), "isr": isr, "leader": self.me,
            "leader_epoch": p.leader_epoch, "partition_epoch": epoch + 1,
            "adding_replicas": [], "removing_replicas": []}
        return [self.last_record]

    def measure(self, reps: int, with_broker: bool) -> dict[str, Any]:
        load = load_average()
        replay = timed(self.replay, self.replay_entry, reps)
        with self.controller.batch():  # its records appended once, at the end: no fsync each
            alter = timed(self.alter, self.alter_request, reps)
        if not with_broker:
            return {"controller_replay": replay, "controller_alter_partition": alter,
                    "broker_apply": None, "load": [load, load_average()]}
        apply = timed(self.loader.handle_commit, self.broker_records, reps)
        apply["examined"] = self.broker.replica_manager.last_apply_examined
        apply["hosted"] = len(self.broker.replica_manager.partitions)
        r = self.last_record
        name = self.controller.replication.names_by_id[r["topic_id"]]
        held = self.broker.replica_manager.partitions[(name, r["partition_id"])]
        if held.partition_epoch != r["partition_epoch"]:
            raise RuntimeError(f"the broker did not apply the change: {held}")
        return {"controller_replay": replay, "controller_alter_partition": alter,
                "broker_apply": apply, "load": [load, load_average()]}

    def profile(self, reps: int) -> list[dict[str, Any]]:
        """Where the broker's apply of one record goes: the eight functions of most time of
        their own."""
        pulls = [self.broker_records(i) for i in range(reps)]
        profiler = cProfile.Profile()
        profiler.enable()
        for records in pulls:
            self.loader.handle_commit(records)
        profiler.disable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:8]
        return [{"function": f"{pathlib.Path(f).name}:{line}({fn})",
                 "self_us_per_apply": round(tt * 1e6 / reps, 1),
                 "total_us_per_apply": round(ct * 1e6 / reps, 1), "calls": nc}
                for (f, line, fn), (_, nc, tt, ct, _) in rows]


def run_image(args: argparse.Namespace) -> dict[str, Any]:
    from kafkacore.broker.log.log_manager import log_budget

    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-quorum-image-", dir=args.log_dir))
    # A broker holds a log per partition it hosts: it hosts no more than its descriptors allow
    # (log_budget, less a margin); the partitions past that are in its image, not its logs.
    budget = log_budget()
    hosted_limit = max(budget - 500, args.partitions_per_topic)
    image = Image(work, args.partitions_per_topic, hosted_limit)
    points: list[dict[str, Any]] = []
    try:
        for size in args.image_sizes:
            load = load_average()
            with_broker = not args.controller_only
            controller_s, broker_s = image.grow(size, with_broker)
            point = {"partitions": len(image.topics) * args.partitions_per_topic,
                     "topics": len(image.topics), "controller_create_s": round(controller_s, 2),
                     "broker_apply_new_s": None if broker_s is None else round(broker_s, 2),
                     "create_load": load, **image.measure(args.repetitions, with_broker)}
            points.append(point)
            print(f"image of {point['partitions']} partitions: {point}", flush=True)
        profile = None if args.controller_only else image.profile(min(200, args.repetitions))
    finally:
        image.close()
        if args.log_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    growth = {}
    for k in ("controller_replay", "controller_alter_partition", "broker_apply"):
        measured = [p for p in points if p[k] is not None]
        first, last = measured[0], measured[-1]
        growth[k] = {"from": first["partitions"], "to": last["partitions"],
                     "ratio": round(last[k]["median_us"] / max(first[k]["median_us"], 1e-9), 2)}
    return {"repetitions": args.repetitions, "per_topic": args.partitions_per_topic,
            "broker_log_budget": budget, "hosted_limit": hosted_limit, "points": points,
            "median_largest_over_smallest": growth,
            "broker_apply_profile": {"partitions": image.broker_topics * args.partitions_per_topic,
                                     "functions": profile}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--batch", type=int, default=50, help="topics per CreateTopics request")
    parser.add_argument("--image-sizes", type=int, nargs="+", default=[1000, 3000, 10000],
                        help="partitions of the in-process image at each measurement")
    parser.add_argument("--repetitions", type=int, default=500)
    parser.add_argument("--log-dir", default=None,
                        help="keep the cluster's logs and data here (default: a temporary dir)")
    parser.add_argument("--no-cluster", action="store_true", help="only the in-process image")
    parser.add_argument("--no-image", action="store_true", help="only the cluster")
    parser.add_argument("--controller-only", action="store_true",
                        help="the image: the controller's costs only, not the broker's")
    parser.add_argument("--bound", type=float, default=BOUND_S,
                        help="seconds each wait (every broker listing, all in sync) may take")
    parser.add_argument("--out", default=str(RESULTS / "quorum_scale.json"))
    args = parser.parse_args()
    if sorted(args.image_sizes) != args.image_sizes \
            or args.image_sizes[0] < args.partitions_per_topic:
        parser.error("--image-sizes: growing, each at least --partitions-per-topic")
    if args.log_dir is not None:
        pathlib.Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    from kafkacore.broker.log.log_manager import log_budget

    started = time.monotonic()
    data: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "replication_factor": 3, "brokers": 3, "controllers": 3,
        # what limits the logs a broker may hold: the descriptors (LogManager's log_budget)
        "open_files_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
        "broker_log_budget": log_budget()}
    out = pathlib.Path(args.out)
    # The file keeps one cluster run per partition count (the latest) and the latest image.
    kept = json.loads(out.read_text()) if out.exists() else {}
    data["cluster"] = kept.get("cluster", {})
    if "image" in kept:
        data["image"] = kept["image"]
    if not args.no_cluster:
        run = run_cluster(args)
        run.update(when=data["when"], topics=args.topics, batch=args.batch,
                   partitions_per_topic=args.partitions_per_topic,
                   run_s=round(time.monotonic() - started, 1))
        data["cluster"][str(args.topics * args.partitions_per_topic)] = run
    if not args.no_image:
        data["image"] = {"when": data["when"], **run_image(args)}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps({k: v for k, v in data.items() if k in ("cluster", "image")}, indent=1)[:6000])


if __name__ == "__main__":
    main()
