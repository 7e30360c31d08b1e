"""Producing DataFrames to Kafka from Spark's executors.

Spark's own Kafka sink needs JVM jars that a Python user often cannot add.  Here the records are
produced by kafkacore in the Python workers: :func:`write_to_kafka` runs the job with
``mapInArrow``, hands each Arrow batch to :meth:`KafkaProducer.send_batch
<kafkacore.producer.KafkaProducer.send_batch>` column by column, flushes before each task ends
and returns a :class:`WriteSummary`; :func:`delivery_reports` is the lazy form, a DataFrame with
the partition, offset and error of every row.

Producers live in the executors, one per Python worker process and configuration
(:func:`get_producer`): Spark reuses its Python workers across tasks and jobs, so a producer, its
connections and its metadata outlive a task.  A producer is never used in a process other than the
one that created it (after ``fork()`` the child builds its own).

PySpark and pyarrow are imported only when a function here runs, so ``import kafkacore.spark``
works without them (the docs build does).
"""

from __future__ import annotations

import atexit
import collections
import functools
import itertools
import json
import logging
import os
import pickle
import threading
import time
import uuid
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkacore.errors import ConfigError, KafkaError
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger("kafkacore.spark")

__all__ = [
    "DeliveryFailedError",
    "WriteSummary",
    "close_producers",
    "delivery_reports",
    "get_producer",
    "write_to_kafka",
]


class DeliveryFailedError(KafkaError):
    """:func:`write_to_kafka` finished, but some records were not acknowledged.

    The message names the first failure; :attr:`summary` holds the whole
    :class:`WriteSummary` (how many failed, how many were acked, where they went).
    """

    def __init__(self, message: str, summary: WriteSummary) -> None:
        super().__init__(message)
        #: The :class:`WriteSummary` of the job.
        self.summary = summary


# ---------------------------------------------------------------------------------------------
# The per-process producer cache
# ---------------------------------------------------------------------------------------------
# A Spark Python worker runs one task at a time, but a producer may also be asked for from
# threads of the user's own, so the cache has a lock.  After fork() the child must not touch the
# parent's producers: their I/O threads did not survive the fork, their sockets are shared with
# the parent, and the lock may have been held by a thread that no longer exists.


@dataclass(frozen=True)
class _Cached:
    pid: int  # the process that created the producer: it is never used in another one
    serial: int  # tells producers apart within a process (reported by the write summary)
    producer: Any  # the KafkaProducer


_cache_lock = threading.Lock()
_cache: dict[Hashable, _Cached] = {}  # guarded by _cache_lock: config key -> producer
# Producers inherited through fork().  They stay referenced so that their __del__ (which stops
# the I/O thread and touches sockets the parent still uses) never runs in the child.
_orphans: list[Any] = []  # guarded by _cache_lock
_serials = itertools.count(1)


def _after_fork_in_child() -> None:
    # The child has one thread; whatever held the lock in the parent is gone.  A fresh lock, and
    # the parent's producers moved out of the way (kept alive, never used, never closed).
    global _cache_lock
    _cache_lock = threading.Lock()
    _orphans.extend(entry.producer for entry in _cache.values())
    _cache.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _freeze(value: Any) -> Hashable:
    """A hashable, canonical form of one setting's value."""
    if value is None or isinstance(value, (str, bytes, int, float, bool)):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_freeze(v) for v in value))
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), _freeze(v)) for k, v in value.items())))
    # Callables (serializers, a partitioner, interceptors) arrive in each task as new objects
    # unpickled from the task closure; their pickled bytes are stable where their id() is not.
    try:
        from pyspark import cloudpickle as dumper  # pickles lambdas and closures by value
    except ImportError:
        dumper = pickle
    try:
        return ("pickled", dumper.dumps(value))
    except Exception:  # unpicklable: it cannot have come through Spark; identity is all we have
        return ("object", type(value).__qualname__, id(value))


def config_key(config: Mapping[str, Any]) -> Hashable:
    """The cache key of a producer configuration: equal settings give equal keys, whatever the
    order of the dict or the identity of its values."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict of settings, not {type(config).__name__}")
    return tuple(sorted((str(k), _freeze(v)) for k, v in config.items()))


def get_producer(config: Mapping[str, Any], *, key: Hashable | None = None) -> Any:
    """The producer of this process for ``config``, created on first use.

    One producer per configuration and process: tasks that run in the same Python worker share
    it.  A producer created by another process (this one is a fork of it) is never returned; a
    new one is built.  ``key`` is :func:`config_key` of ``config`` if the caller computed it.
    """
    if key is None:
        key = config_key(config)
    pid = os.getpid()
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None and entry.pid == pid:
            return entry.producer
        if entry is not None:
            # A fork that bypassed os.register_at_fork (a fork() from C): same rule, never use it.
            _orphans.append(entry.producer)
            del _cache[key]
    # Build outside the lock: connecting may take a while, and KafkaProducer() starts a thread.
    from kafkacore.producer import KafkaProducer

    producer = KafkaProducer(dict(config))
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None and entry.pid == pid:
            # Another thread won the race: keep its producer, close ours.
            producer.close(0)
            return entry.producer
        _cache[key] = _Cached(pid, next(_serials), producer)
    return producer


def _identity(producer: Any) -> tuple[int, int]:
    """(pid, serial) of a cached producer, for the summary."""
    with _cache_lock:
        for entry in _cache.values():
            if entry.producer is producer:
                return entry.pid, entry.serial
    return os.getpid(), 0


def close_producers(timeout: float | None = 10.0) -> int:
    """Close this process's cached producers (each waits up to ``timeout`` seconds to deliver
    what it holds) and forget them.  Returns how many were closed.  Runs at interpreter exit."""
    pid = os.getpid()
    with _cache_lock:
        mine = [entry for entry in _cache.values() if entry.pid == pid]
        _cache.clear()
    for entry in mine:
        try:
            entry.producer.close(timeout)
        except Exception:  # closing at exit: report, go on with the others
            log.exception("closing a cached kafkacore producer failed")
    return len(mine)


atexit.register(close_producers)


# ---------------------------------------------------------------------------------------------
# What the driver checks and ships to the executors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """Everything a task needs, pickled once with the job: small and module-level."""

    topic: str
    config: dict  # the user's settings, as given
    key: Hashable  # config_key(config), computed once on the driver
    value_column: str
    key_column: str | None
    headers_column: str | None
    partition_column: str | None
    timestamp_column: str | None
    keep: tuple[str, ...]  # input columns copied to the delivery reports
    wait_s: float  # bound on every wait for acknowledgements
    # Exactly-once writes: "<prefix>-<write id>"; each task's transactional id and bookkeeping
    # group is this followed by "-<spark partition>".  None: at-least-once.
    write_name: str | None = None
    # Tests only: called as fault(point) at the named points of an exactly-once task.
    fault: Any = None


def _check_columns(df: Any, key, value, headers, partition, timestamp) -> dict[str, Any]:
    """Check the DataFrame's schema on the driver, before any job starts."""
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in df.schema.fields}

    def field_type(role: str, name: Any):
        if not isinstance(name, str):
            raise TypeError(f"{role}= must be a column name (str), not {name!r}")
        if name not in fields:
            raise ValueError(
                f"the DataFrame has no column {name!r} for the record {role} "
                f"(its columns: {', '.join(fields) or 'none'})"
            )
        return fields[name]

    def bytes_like(role: str, name: str) -> None:
        t = field_type(role, name)
        if not isinstance(t, (T.StringType, T.BinaryType)):
            raise TypeError(
                f"column {name!r} (the record {role}) has type {t.simpleString()}; a {role} must "
                f"be string or binary: cast it (F.col({name!r}).cast('string')) or encode it "
                f"(F.to_json, F.to_avro)"
            )

    bytes_like("value", value)
    if key is not None:
        bytes_like("key", key)
    if partition is not None:
        t = field_type("partition", partition)
        if not isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            raise TypeError(
                f"column {partition!r} (the record partition) has type {t.simpleString()}; "
                f"a partition must be an integer"
            )
    if timestamp is not None:
        t = field_type("timestamp", timestamp)
        if not isinstance(t, (T.TimestampType, T.TimestampNTZType, T.LongType)):
            raise TypeError(
                f"column {timestamp!r} (the record timestamp) has type {t.simpleString()}; "
                f"a timestamp must be a timestamp or a long of milliseconds since the epoch"
            )
    if headers is not None:
        t = field_type("headers", headers)
        ok = False
        if isinstance(t, T.MapType):
            ok = isinstance(t.keyType, T.StringType) and isinstance(
                t.valueType, (T.StringType, T.BinaryType)
            )
        elif isinstance(t, T.ArrayType) and isinstance(t.elementType, T.StructType):
            names = [f.name for f in t.elementType.fields]
            types = [f.dataType for f in t.elementType.fields]
            ok = (
                names == ["key", "value"]
                and isinstance(types[0], T.StringType)
                and isinstance(types[1], (T.StringType, T.BinaryType))
            )
        if not ok:
            raise TypeError(
                f"column {headers!r} (the record headers) has type {t.simpleString()}; headers "
                f"must be map<string, binary|string> or array<struct<key: string, value: "
                f"binary|string>>"
            )
    return fields


# Settings send_batch does not use (it takes the columns' bytes as they are).
_NOT_FOR_COLUMNS = frozenset({"key.serializer", "value.serializer", "interceptor.classes"})


def _make_plan(df, topic, config, key, value, headers, partition, timestamp, keep=(),
               write_name=None, fault=None) -> _Plan:
    from kafkacore.config import ProducerConfig

    if type(topic) is not str or not topic:
        raise TypeError(f"topic must be a non-empty str, not {topic!r}")
    if write_name is not None:
        # Each task sets its own transactional.id; check the rest as a transactional producer.
        config = {k: v for k, v in config.items() if k != "transactional.id"}
        checked = ProducerConfig({**config, "transactional.id": write_name})
    else:
        checked = ProducerConfig(config)  # a bad setting fails here, on the driver, naming it
    ignored = sorted(_NOT_FOR_COLUMNS & checked.explicit)
    if ignored:
        # send_batch sends the columns' bytes as they are: these would silently do nothing.
        raise ConfigError(
            f"{', '.join(map(repr, ignored))} do not apply to DataFrame columns: the key and value "
            f"columns are sent as they are.  Encode them in Spark instead (F.to_json, F.to_avro, "
            f"a cast to binary) and leave these settings out"
        )
    _check_columns(df, key, value, headers, partition, timestamp)
    # A task waits for its acknowledgements at most as long as the producer lets a record live.
    wait_s = (checked["delivery.timeout.ms"] + checked["request.timeout.ms"]) / 1000 + 5
    return _Plan(
        topic=topic,
        config=dict(config),
        key=config_key(config),
        value_column=value,
        key_column=key,
        headers_column=headers,
        partition_column=partition,
        timestamp_column=timestamp,
        keep=tuple(keep),
        wait_s=wait_s,
        write_name=write_name,
        fault=fault,
    )


# ---------------------------------------------------------------------------------------------
# In the executors: one Arrow batch -> one send_batch call
# ---------------------------------------------------------------------------------------------


def _int_array(values: Any, type_: Any) -> Any:
    """A BatchResult column (``array.array`` of ints, or a list) as a pyarrow array; an
    ``array.array`` of the right width is wrapped without a copy."""
    import array as _array

    import pyarrow as pa

    if isinstance(values, _array.array) and values.itemsize * 8 == type_.bit_width:
        return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])
    return pa.array(list(values), type_)


def _headers_of(array: Any) -> list:
    """Per-record header lists [(name, bytes), ...] (or None) from a map or array<struct>."""
    out = []
    for row in array.to_pylist():
        if row is None:
            out.append(None)
            continue
        pairs = row if isinstance(row, list) else list(row.items())
        record = []
        for item in pairs:
            name, raw = (item["key"], item["value"]) if isinstance(item, dict) else item
            record.append((name, raw.encode() if isinstance(raw, str) else raw))
        out.append(record)
    return out


def _timestamps_of(array: Any) -> Any:
    """Milliseconds since the epoch (int64), from a Spark timestamp (microseconds) or a long."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(array.type):
        return pc.divide(array.cast(pa.int64()), 1000)
    return array.cast(pa.int64())


def _send(producer: Any, plan: _Plan, batch: Any) -> Any:
    """Hand one Arrow RecordBatch to send_batch; return its BatchFuture.  Key and value columns
    go as they are: send_batch reads string and binary Arrow arrays from their buffers."""
    values = batch.column(plan.value_column)
    keys = batch.column(plan.key_column) if plan.key_column else None
    partitions = None
    if plan.partition_column:
        partitions = batch.column(plan.partition_column)
        if partitions.null_count:
            row = partitions.is_null().to_pylist().index(True)
            raise ValueError(
                f"column {plan.partition_column!r} (the record partition) is null in a row "
                f"({partitions.null_count} of {len(partitions)} in this batch, the first at "
                f"row {row}): give every row a partition, or pass partition=None"
            )
    timestamps = (
        _timestamps_of(batch.column(plan.timestamp_column)) if plan.timestamp_column else None
    )
    headers = _headers_of(batch.column(plan.headers_column)) if plan.headers_column else None
    return producer.send_batch(
        plan.topic, values, keys=keys, partitions=partitions, timestamps=timestamps,
        headers=headers,
    )


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


# The one row each write task returns to the driver.
_SUMMARY_SCHEMA = (
    "pid int, serial long, records long, failures long, first_error string, "
    "partitions array<int>, counts array<long>, cpu_seconds double"
)


def _write_task(plan: _Plan, batches: Iterator[Any]) -> Iterator[Any]:
    """The body of one write task (the mapInArrow function): send every batch, flush, wait for
    every acknowledgement, then yield one summary row.  Yielding only after the waits is what
    makes the task succeed only once its records are acked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cpu = time.process_time()  # this worker's CPU, all its threads (the producer's I/O too)
    producer = get_producer(plan.config, key=plan.key)
    pending = []
    records = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(_send(producer, plan, batch))
            records += batch.num_rows
    producer.flush(plan.wait_s)
    failures = 0
    first_error = None
    counts: collections.Counter[int] = collections.Counter()
    for future in pending:
        result = future.result(plan.wait_s)
        partitions = _int_array(result.partitions, pa.int32())
        if result.failed:
            failures += result.failed
            if first_error is None:
                first_error = _error_text(next(e for e in result.errors if e is not None))
            partitions = partitions.filter(pa.array([e is None for e in result.errors]))
        # Count in C (pyarrow), not with a Python loop over the rows.
        for item in pc.value_counts(partitions).to_pylist():
            counts[item["values"]] += item["counts"]
    pid, serial = _identity(producer)
    yield _summary_row(pid, serial, records, failures, first_error, counts,
                       time.process_time() - cpu)


def _summary_row(pid: int, serial: int, records: int, failures: int, first_error: str | None,
                 counts: Mapping[int, int], cpu_seconds: float) -> Any:
    """The one summary row of a write task, as an Arrow batch of _SUMMARY_SCHEMA."""
    import pyarrow as pa

    ordered = sorted(counts)
    return pa.RecordBatch.from_pydict(
        {
            "pid": [pid],
            "serial": [serial],
            "records": [records],
            "failures": [failures],
            "first_error": [first_error],
            "partitions": [ordered],
            "counts": [[counts[p] for p in ordered]],
            "cpu_seconds": [cpu_seconds],
        },
        schema=pa.schema(
            [
                ("pid", pa.int32()),
                ("serial", pa.int64()),
                ("records", pa.int64()),
                ("failures", pa.int64()),
                ("first_error", pa.string()),
                ("partitions", pa.list_(pa.int32())),
                ("counts", pa.list_(pa.int64())),
                ("cpu_seconds", pa.float64()),
            ]
        ),
    )


# ---------------------------------------------------------------------------------------------
# Exactly-once: one transaction per Spark partition, its completion committed with it
# ---------------------------------------------------------------------------------------------
# The offset committed for a finished task, in its bookkeeping group: the number of records it
# wrote, on partition 0 of the topic written to (a partition that surely exists), with the
# per-partition counts as the commit's metadata (offset.metadata.max.bytes is 4096 by default:
# past _MAX_METADATA characters they are left out).
_MAX_METADATA = 3000


def _write_task_exactly_once(plan: _Plan, batches: Iterator[Any]) -> Iterator[Any]:
    """The body of one exactly-once write task.  The order is what makes it safe:

    1. init_transactions with the id of this Spark partition: the coordinator fences every
       earlier attempt of it, and ends what such an attempt left open (an open transaction is
       aborted; a commit already decided is completed first).
    2. Only then ask the bookkeeping group whether this partition's transaction committed: an
       attempt that did commit is now settled either way, so the answer is final.  If it
       committed, write nothing.
    3. Otherwise one transaction: every record, plus the completion offset; commit at the end.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    from kafkacore.producer import KafkaProducer

    cpu = time.process_time()
    fault = plan.fault or (lambda point: None)
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("an exactly-once write task runs only inside a Spark task")
    name = f"{plan.write_name}-{context.partitionId()}"
    producer = KafkaProducer({**plan.config, "transactional.id": name})
    try:
        producer.init_transactions(plan.wait_s)
        done = _completion(plan, name)
        if done is not None:  # an earlier attempt committed this partition: nothing to send
            for _ in batches:  # read the input to its end, as Spark expects, and drop it
                pass
            yield _summary_row(os.getpid(), 0, done[0], 0, None, done[1],
                               time.process_time() - cpu)
            return
        fault("begun")
        producer.begin_transaction()
        pending = []
        records = 0
        for batch in batches:
            if batch.num_rows:
                pending.append(_send(producer, plan, batch))
                records += batch.num_rows
                fault("sending")
        producer.flush(plan.wait_s)
        counts: collections.Counter[int] = collections.Counter()
        for future in pending:
            result = future.result(plan.wait_s)
            if result.failed:
                # The transaction cannot commit with a record missing: fail the task, and let
                # Spark's retry start a new transaction (the coordinator aborts this one).
                raise next(e for e in result.errors if e is not None)
            for item in pc.value_counts(_int_array(result.partitions, pa.int32())).to_pylist():
                counts[item["values"]] += item["counts"]
        metadata = json.dumps({str(p): n for p, n in sorted(counts.items())},
                              separators=(",", ":"))
        producer.send_offsets_to_transaction(
            {(plan.topic, 0): (records, metadata if len(metadata) <= _MAX_METADATA else None)},
            name, plan.wait_s)
        fault("flushed")
        producer.commit_transaction(plan.wait_s)
        fault("committed")
    finally:
        producer.close(0)  # everything is acknowledged, or the task is failing anyway
    yield _summary_row(os.getpid(), 0, records, 0, None, counts, time.process_time() - cpu)


def _completion(plan: _Plan, group: str) -> tuple[int, dict[int, int]] | None:
    """What the bookkeeping group ``group`` says: (records, counts per partition) if this
    partition's transaction committed, else None."""
    mark = _committed_mark(plan.config, plan.wait_s, group, plan.topic)
    if mark is None:
        return None
    counts = json.loads(mark[1]) if mark[1] else {}
    return mark[0], {int(p): n for p, n in counts.items()}


def _committed_mark(config: Mapping[str, Any], wait_s: float, group: str,
                    topic: str) -> tuple[int, str | None] | None:
    """The offset and metadata group ``group`` has committed for partition 0 of ``topic``, or
    None.  OffsetFetch with require_stable: while a commit's markers are still being written
    the broker answers UNSTABLE_OFFSET_COMMIT, and we ask again, within ``wait_s``.  (The
    exactly-once writers keep their completion marks there; kafkacore.spark.sink too.)"""
    from kafkacore import errors
    from kafkacore.admin import refresh_metadata
    from kafkacore.config import ProducerConfig
    from kafkacore.errors import Errors
    from kafkacore.metadata import Metadata
    from kafkacore.network import sasl, tls
    from kafkacore.network.client import NetworkClient, clock_ms

    bound_ms = int(wait_s * 1000)
    deadline = clock_ms() + bound_ms
    # The check's own short-lived client, connecting as the producer does (TLS, SASL).
    cfg = ProducerConfig(dict(config))
    protocol = cfg["security.protocol"]
    with NetworkClient(
        [f"{host}:{port}" for host, port in cfg["bootstrap.servers"]],
        Metadata(),
        request_timeout_ms=bound_ms,
        ssl_context=tls.create_ssl_context(cfg) if protocol.endswith("SSL") else None,
        sasl_mechanism=sasl.mechanism_factory(cfg) if protocol.startswith("SASL_") else None,
    ) as client:
        refresh_metadata(client, deadline)
        while True:
            if clock_ms() > deadline:
                raise errors.KafkaTimeoutError(
                    f"no settled answer from the coordinator of group {group!r} in time")
            node = _call(client, None, ApiKey.FIND_COORDINATOR, 1,
                         {"key": group, "key_type": 0}, deadline)
            code = node["error_code"]
            if code == Errors.NONE:
                answer = _call(client, node["node_id"], ApiKey.OFFSET_FETCH, 7, {
                    "group_id": group, "require_stable": True,
                    "topics": [{"name": topic, "partition_indexes": [0]}]}, deadline)
                code = answer["error_code"]
                if code == Errors.NONE:
                    mark = answer["topics"][0]["partitions"][0]
                    code = mark["error_code"]
            if code == Errors.NONE:
                break
            error = errors.for_code(code)(f"OffsetFetch for group {group!r}")
            if not error.retriable:
                raise error
            time.sleep(0.05)  # the coordinator is loading or the commit is settling
    if mark["committed_offset"] < 0:
        return None
    return mark["committed_offset"], mark["metadata"] or None


def _call(client: Any, node: int | None, api_key: ApiKey, version: int, body: dict[str, Any],
          deadline: int) -> dict[str, Any]:
    """One request at ``version`` to ``node`` (None: any broker), its response body."""
    from kafkacore import errors
    from kafkacore.network.client import clock_ms

    if node is None:
        node = client.least_loaded_node(clock_ms())
        if node is None:
            raise errors.KafkaTimeoutError("no broker to ask")
    client.await_ready(node, max(deadline - clock_ms(), 1))
    done: list[Any] = []
    client.send(node, api_key, body, callback=done.append, api_version=version)
    while not done:
        if clock_ms() > deadline:
            raise errors.KafkaTimeoutError(f"no answer to {api_key.name} in time")
        client.poll(100)
    if done[0].error is not None:
        raise done[0].error
    answer: dict[str, Any] = done[0].body
    return answer


@dataclass
class WriteSummary:
    """What :func:`write_to_kafka` did."""

    topic: str  #: the topic written to
    records: int  #: rows the tasks handed to the producer
    failures: int  #: records that were not acknowledged
    partition_counts: dict[int, int]  #: acknowledged records per Kafka partition
    seconds: float  #: wall time of the Spark job, driver side
    tasks: int  #: Spark tasks that wrote
    #: the producers that served the tasks, as (process id, serial) pairs, one per Python worker
    producers: frozenset[tuple[int, int]] = field(default_factory=frozenset)
    #: the first failure a task saw (the error's class and message), or None
    first_error: str | None = None
    #: CPU time the Python workers spent in the tasks, every thread of theirs counted (the
    #: producers' I/O threads too): the client's cost, whatever the broker's speed
    cpu_seconds: float = 0.0

    @property
    def acked(self) -> int:
        """Records acknowledged by the broker."""
        return self.records - self.failures

    @property
    def rows_per_second(self) -> float:
        """Records per second of wall time (0 if the job took no measurable time)."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        spread = ", ".join(f"{p}: {n}" for p, n in sorted(self.partition_counts.items()))
        return (
            f"{self.records} records to {self.topic!r} in {self.seconds:.2f} s "
            f"({self.rows_per_second:,.0f}/s), {self.failures} failed; per partition {{{spread}}}"
        )


def write_to_kafka(
    df: Any,
    topic: str,
    config: Mapping[str, Any],
    *,
    key: str | None = "key",
    value: str = "value",
    headers: str | None = None,
    partition: str | None = None,
    timestamp: str | None = None,
    exactly_once: bool = False,
    write_id: str | None = None,
) -> WriteSummary:
    """Produce every row of ``df`` to ``topic``, from the executors, and wait until all are acked.

    :param df: a PySpark DataFrame.
    :param config: producer settings by their Java names (``{"bootstrap.servers": ...}``); the
        executors build one producer per Python worker from it.
    :param key: the key column (string or binary; ``None``: records without keys).
    :param value: the value column (string or binary; nulls become tombstones).
    :param headers: a column of ``map<string, binary|string>`` or
        ``array<struct<key: string, value: binary|string>>``, or ``None``.
    :param partition: an integer column choosing each record's partition (no nulls: a null
        fails the task with an error naming the column), or ``None`` to let the partitioner
        choose.
    :param timestamp: a timestamp column, or a long column of epoch milliseconds (nulls: now).
    :returns: a :class:`WriteSummary`.
    :raises TypeError, ValueError: a column is missing or has the wrong type (checked on the
        driver, before the job starts); :class:`~kafkacore.errors.ConfigError` for a bad setting.
    :raises DeliveryFailedError: the job ran, but some records were not acknowledged.

    :param exactly_once: each task writes its Spark partition in one transaction and commits
        it with a record of its completion, so that a read_committed consumer sees every row
        exactly once whatever Spark retries (see the chapter on Spark).  ``transactional.id`` in
        ``config``, if set, is the prefix of the tasks' transactional ids (default
        ``kafkacore-spark``).
    :param write_id: names this write, for ``exactly_once``: the tasks' transactional ids and
        bookkeeping groups are ``<prefix>-<write_id>-<spark partition>``.  Default: a new
        random id.  Give the same id to run the same write again (the same DataFrame, split the
        same way) after a failed job: the partitions that committed are not written again.

    Each task sends its Arrow batches with ``send_batch``, flushes, and finishes only when the
    broker has answered for every one of its records, so a task that Spark retries sends its
    records again: at-least-once delivery, unless ``exactly_once``.
    """
    return _write_to_kafka(df, topic, config, key=key, value=value, headers=headers,
                           partition=partition, timestamp=timestamp, exactly_once=exactly_once,
                           write_id=write_id)


def _write_to_kafka(df: Any, topic: str, config: Mapping[str, Any], *, key: str | None,
                    value: str, headers: str | None, partition: str | None,
                    timestamp: str | None, exactly_once: bool, write_id: str | None,
                    fault: Any = None) -> WriteSummary:
    """write_to_kafka, with the tests' ``fault(point)`` hook for exactly-once tasks."""
    write_name = None
    task = _write_task
    if exactly_once:
        if write_id is None:
            write_id = uuid.uuid4().hex
        if type(write_id) is not str or not write_id:
            raise TypeError(f"write_id must be a non-empty str, not {write_id!r}")
        prefix = config.get("transactional.id") or "kafkacore-spark"
        write_name = f"{prefix}-{write_id}"
        task = _write_task_exactly_once
    elif write_id is not None or fault is not None:
        raise ValueError("write_id names an exactly-once write: pass exactly_once=True too")
    plan = _make_plan(df, topic, config, key, value, headers, partition, timestamp,
                      write_name=write_name, fault=fault)
    job = df.mapInArrow(functools.partial(task, plan), _SUMMARY_SCHEMA)
    start = time.perf_counter()
    rows = job.collect()
    return _summarize(topic, rows, time.perf_counter() - start)


def _summarize(topic: str, rows: list, seconds: float) -> WriteSummary:
    """Add up the tasks' summary rows; raise DeliveryFailedError if any record failed."""
    counts: collections.Counter[int] = collections.Counter()
    first_error = None
    for row in rows:
        counts.update(dict(zip(row["partitions"], row["counts"], strict=True)))
        if first_error is None and row["first_error"] is not None:
            first_error = row["first_error"]
    summary = WriteSummary(
        topic=topic,
        records=sum(row["records"] for row in rows),
        failures=sum(row["failures"] for row in rows),
        partition_counts=dict(sorted(counts.items())),
        seconds=seconds,
        tasks=len(rows),
        producers=frozenset((row["pid"], row["serial"]) for row in rows),
        first_error=first_error,
        cpu_seconds=sum(row["cpu_seconds"] for row in rows),
    )
    if summary.failures:
        raise DeliveryFailedError(
            f"{summary.failures} of {summary.records} records were not delivered to {topic!r}; "
            f"the first failure: {first_error}",
            summary,
        )
    return summary


# ---------------------------------------------------------------------------------------------
# The lazy form: one report row per input row
# ---------------------------------------------------------------------------------------------

_REPORT_COLUMNS = ("partition", "offset", "error")
# Batches sent but not yet reported, per task: enough to keep the producer busy while we wait
# for the oldest, few enough that their input rows do not pile up in memory.
_REPORT_WINDOW = 4


def _report_task(plan: _Plan, batches: Iterator[Any]) -> Iterator[Any]:
    """The body of one delivery_reports task: send each batch, and yield its report rows once
    its future resolved (oldest first, so reports come out in input order)."""
    producer = get_producer(plan.config, key=plan.key)
    window: collections.deque = collections.deque()
    for batch in batches:
        if not batch.num_rows:
            continue
        window.append((batch, _send(producer, plan, batch)))
        if len(window) > _REPORT_WINDOW:
            yield _report_rows(plan, *window.popleft())
    if window:
        producer.flush(plan.wait_s)
    while window:
        yield _report_rows(plan, *window.popleft())


def _report_rows(plan: _Plan, batch: Any, future: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    result = future.result(plan.wait_s)
    n = batch.num_rows
    partitions = _int_array(result.partitions, pa.int32())
    offsets = _int_array(result.offsets, pa.int64())
    if result.failed:
        errors = pa.array(
            [None if e is None else _error_text(e) for e in result.errors], pa.string()
        )
        # A failed record has no partition or offset: null, not -1, so SQL counts it as missing.
        failed = pa.array([e is not None for e in result.errors], pa.bool_())
        partitions = pc.if_else(failed, pa.scalar(None, pa.int32()), partitions)
        offsets = pc.if_else(failed, pa.scalar(None, pa.int64()), offsets)
    else:
        errors = pa.nulls(n, pa.string())
    columns = [batch.column(name) for name in plan.keep] + [partitions, offsets, errors]
    return pa.RecordBatch.from_arrays(columns, names=[*plan.keep, *_REPORT_COLUMNS])


def delivery_reports(
    df: Any,
    topic: str,
    config: Mapping[str, Any],
    *,
    key: str | None = "key",
    value: str = "value",
    headers: str | None = None,
    partition: str | None = None,
    timestamp: str | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
) -> Any:
    """The lazy form of :func:`write_to_kafka`: a DataFrame with one row per row of ``df``.

    Nothing is sent until an action runs on the result, and every action sends again (cache or
    write the result if you need it twice).  Each row holds the input ``columns`` (default: all
    of them) followed by ``partition`` (int), ``offset`` (long) and ``error`` (string): a
    delivered record has an offset and a null error; a failed one has null partition and offset
    and the error's class and message.  Failures do not raise: they are data, for you to join
    back or filter.  The other arguments are those of :func:`write_to_kafka`, checked the same
    way on the driver.
    """
    from pyspark.sql import types as T

    fields = {f.name: f for f in df.schema.fields}
    keep = tuple(fields) if columns is None else tuple(columns)
    for name in keep:
        if name not in fields:
            raise ValueError(
                f"columns= names {name!r}, which the DataFrame does not have "
                f"(its columns: {', '.join(fields)})"
            )
    clash = [name for name in keep if name in _REPORT_COLUMNS]
    if clash:
        raise ValueError(
            f"the report adds columns {', '.join(_REPORT_COLUMNS)}, and the DataFrame already has "
            f"{', '.join(map(repr, clash))}: pass columns=[...] without it, or rename it"
        )
    plan = _make_plan(df, topic, config, key, value, headers, partition, timestamp, keep)
    schema = T.StructType(
        [fields[name] for name in keep]
        + [
            T.StructField("partition", T.IntegerType(), True),
            T.StructField("offset", T.LongType(), True),
            T.StructField("error", T.StringType(), True),
        ]
    )
    return df.mapInArrow(functools.partial(_report_task, plan), schema)
