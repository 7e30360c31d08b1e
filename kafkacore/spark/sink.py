"""``format("kafkacore")`` as a sink: ``df.write`` and ``df.writeStream`` to Kafka.

The writers here are what :class:`~kafkacore.spark.datasource.KafkaDataSource` returns from
``writer()`` and ``streamWriter()``.  They take Spark's Kafka sink interface: the columns
``value`` (required, string or binary), ``key`` (string or binary), ``topic`` (string; the
``topic`` option, if given, overrides it), ``partition`` (int; null lets the partitioner choose)
and ``headers`` (``array<struct<key: string, value: binary>>``); the option
``kafka.bootstrap.servers`` and any ``kafka.``-prefixed producer setting.  Each task hands its
Arrow batches to :meth:`KafkaProducer.send_batch <kafkacore.producer.KafkaProducer.send_batch>`
column by column: no Python object per row (headers aside).

Two guarantees, by the option ``kafkacore.sink.guarantee``:

``exactly_once`` (the default)
    Each Spark task writes its rows in one Kafka transaction, with the transactional id of its
    (query, Spark partition) pair, and commits in that same transaction a *completion mark*:
    the offset ``epoch + 1`` (the micro-batch id; 0 for a batch write) in a bookkeeping group of
    that id, through TxnOffsetCommit.  A task first calls ``init_transactions``, which fences
    every earlier attempt and settles what it left; then it reads its mark: if this epoch's
    mark is committed, an earlier attempt wrote the rows and this one writes nothing.  So a
    retried task, a SIGKILLed worker, a speculative twin and a micro-batch replayed after the
    driver died between the writes and Spark's commit log each leave the rows in the topic
    once, as a ``read_committed`` consumer sees it.

``at_least_once``
    The idempotent producer of :func:`~kafkacore.spark.writers.get_producer`, shared by the
    tasks of a Python worker: no transactions; a retried task or a replayed micro-batch writes
    its rows again, as Spark's own Kafka sink does.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import signal
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from kafkacore.errors import ConfigError

try:  # PySpark is optional for ``import kafkacore.spark``; the writers need it.
    from pyspark.sql.datasource import WriterCommitMessage
except ImportError:  # pragma: no cover - the docs build imports this module without PySpark
    WriterCommitMessage = object  # type: ignore[misc,assignment]

log = logging.getLogger("kafkacore.spark.sink")

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "GUARANTEE_OPTION",
    "KafkaBatchWriter",
    "KafkaStreamWriter",
    "SinkCommitMessage",
    "SinkPlan",
    "sink_plan",
]

#: The option choosing the sink's guarantee.
GUARANTEE_OPTION = "kafkacore.sink.guarantee"
EXACTLY_ONCE = "exactly_once"
AT_LEAST_ONCE = "at_least_once"
#: The option naming the prefix of the tasks' transactional ids (``kafka.transactional.id``
#: is taken as the prefix too).
PREFIX_OPTION = "kafkacore.sink.transactional.prefix"
_DEFAULT_PREFIX = "kafkacore-spark-sink"

# Tests only: where a task or the driver dies (see _fault).
_FAULT_PROPERTY = "kafkacore.sink.fault"
_FAULT_ENV = "KAFKACORE_SINK_FAULT"


@dataclasses.dataclass(frozen=True)
class SinkPlan:
    """What a write task needs, checked on the driver and pickled with the writer."""

    topic: str | None  #: the ``topic`` option (overrides a ``topic`` column)
    config: dict  #: producer settings, without their ``kafka.`` prefix
    guarantee: str  #: EXACTLY_ONCE or AT_LEAST_ONCE
    prefix: str  #: of the tasks' transactional ids and bookkeeping groups
    columns: dict[str, str]  #: role (key, value, topic, partition, headers) -> column name
    wait_s: float  #: bound on every wait for the broker


def sink_plan(options: Mapping[str, str], schema: Any) -> SinkPlan:
    """Check the sink's options and the DataFrame's schema on the driver (Spark's messages,
    through ``kafkacore.spark.options.parse_sink_options``), and the producer settings.

    :raises ConfigError: a missing ``kafka.bootstrap.servers``, a bad producer setting, an
        unknown option or guarantee, no ``value`` column, neither a ``topic`` option nor column.
    :raises TypeError: a column of the wrong type.
    """
    from kafkacore.config import ProducerConfig
    from kafkacore.spark.options import parse_sink_options

    parsed = parse_sink_options(options, schema, extra_options=(GUARANTEE_OPTION, PREFIX_OPTION))
    config: dict[str, Any] = dict(parsed.kafka_config)
    if "interceptor.classes" in config:
        raise ConfigError("Kafka option 'interceptor.classes' is not supported: the columns are "
                          "sent as they are")
    guarantee = parsed.extra.get(GUARANTEE_OPTION, EXACTLY_ONCE).strip().lower()
    if guarantee not in (EXACTLY_ONCE, AT_LEAST_ONCE):
        raise ConfigError(f"option {GUARANTEE_OPTION!r} must be {EXACTLY_ONCE!r} or "
                          f"{AT_LEAST_ONCE!r}, not {guarantee!r}")
    # kafka.transactional.id, if given, is the prefix of the tasks' ids (each task has its own).
    given = config.pop("transactional.id", None)
    prefix = parsed.extra.get(PREFIX_OPTION) or given or _DEFAULT_PREFIX
    try:
        checked = ProducerConfig({**config, "transactional.id": prefix}
                                 if guarantee == EXACTLY_ONCE else config)
    except ConfigError as exc:  # name the option as the user wrote it
        raise ConfigError(f"a kafka.-prefixed option of the kafkacore sink: {exc}") from exc
    wait_s = (checked["delivery.timeout.ms"] + checked["request.timeout.ms"]) / 1000 + 5
    roles = {"key": parsed.key_column, "value": parsed.value_column,
             "topic": None if parsed.topic is not None else parsed.topic_column,
             "partition": parsed.partition_column, "headers": parsed.headers_column}
    return SinkPlan(topic=parsed.topic, config=config, guarantee=guarantee, prefix=prefix,
                    columns={role: name for role, name in roles.items() if name is not None},
                    wait_s=wait_s)


@dataclasses.dataclass
class SinkCommitMessage(WriterCommitMessage):  # type: ignore[misc,valid-type]
    """What one write task reports to the driver."""

    partition_id: int  #: the Spark partition
    records: int  #: rows of this task in Kafka (written now, or by an earlier attempt)
    skipped: bool  #: whether an earlier attempt had committed them (this one wrote nothing)
    counts: dict[int, int]  #: records per Kafka partition (of the mark's topic, if skipped)
    cpu_seconds: float  #: CPU time of the Python worker during the task


# ---------------------------------------------------------------------------------------------
# In the executors
# ---------------------------------------------------------------------------------------------


def _fault(point: str, context: Any = None) -> None:
    """Tests only: die at ``point`` as a fault test asks; nothing otherwise.

    A task reads the local property ``kafkacore.sink.fault``
    (``<partition>=<point>[:raise],...@<marker dir>``): the first time, the task of that Spark
    partition SIGKILLs its own Python worker at that point, or with ``:raise`` raises an error
    there (a marker file says it happened).  On the driver, the environment variable
    ``KAFKACORE_SINK_FAULT`` (``commit:<batch id>:<process group>``) SIGKILLs the driver's
    process group before Spark writes that batch to its commit log.
    """
    if context is None:
        spec = os.environ.get(_FAULT_ENV)
        if spec and spec.rpartition(":")[0] == point:
            os.killpg(int(spec.rpartition(":")[2]), signal.SIGKILL)
        return
    spec = context.getLocalProperty(_FAULT_PROPERTY)
    if not spec:
        return
    deaths, _, marker_dir = spec.partition("@")
    partition = context.partitionId()
    for death in deaths.split(","):
        where, _, how = death.partition(":")
        if where != f"{partition}={point}":
            continue
        marker = os.path.join(marker_dir, f"{partition}-{point}")
        if os.path.exists(marker):
            return
        with open(marker, "w"):
            pass
        if how == "raise":  # a task failure the worker survives (it runs the retry, too)
            raise RuntimeError(f"{_FAULT_PROPERTY}: the task of partition {partition} fails "
                               f"at {point}")
        os.kill(os.getpid(), signal.SIGKILL)


def _first_rows(batches: Iterator[Any]) -> tuple[Any, Iterator[Any]]:
    """The first non-empty batch, and an iterator over it and the rest (None: no rows)."""
    import itertools

    for batch in batches:
        if batch.num_rows:
            return batch, itertools.chain([batch], batches)
    return None, iter(())


def _routes(plan: SinkPlan, batch: Any) -> Iterator[tuple[str, Any]]:
    """(topic, rows) pieces of one Arrow batch: one piece when the option names the topic or
    the batch has one topic; else one per topic, in order of first appearance."""
    import pyarrow.compute as pc

    if plan.topic is not None:
        yield plan.topic, batch
        return
    topics = _column(batch, plan, "topic")
    if topics.null_count:
        raise ValueError(f"null topic in {topics.null_count} of {len(topics)} rows: the 'topic' "
                         f"column needs a topic in every row, or set the option 'topic'")
    names = pc.unique(topics).to_pylist()
    if len(names) == 1:
        yield names[0], batch
        return
    for name in names:
        yield name, batch.filter(pc.equal(topics, name))


def _column(batch: Any, plan: SinkPlan, role: str) -> Any:
    """The Arrow column playing ``role`` (key, value, topic, partition, headers), or None."""
    name = plan.columns.get(role)
    return None if name is None else batch.column(batch.schema.get_field_index(name))


def _send(producer: Any, plan: SinkPlan, batch: Any) -> list:
    """Send one Arrow batch through send_batch; its futures (one per topic and partition rule)."""
    import pyarrow.compute as pc

    from kafkacore.spark.writers import _headers_of

    futures = []
    for topic, rows in _routes(plan, batch):
        values = _column(rows, plan, "value")
        keys = _column(rows, plan, "key")
        headers = _column(rows, plan, "headers")
        partitions = _column(rows, plan, "partition")
        if partitions is not None and partitions.null_count == len(partitions):
            partitions = None  # every row left to the partitioner
        if partitions is not None and partitions.null_count:
            # send_batch takes a partition for every row or for none: two calls (Spark's rule,
            # a null partition is the partitioner's choice).
            for chosen in (True, False):
                part = rows.filter(pc.is_valid(partitions) if chosen else pc.is_null(partitions))
                futures.append(producer.send_batch(
                    topic, _column(part, plan, "value"), keys=_column(part, plan, "key"),
                    partitions=_column(part, plan, "partition") if chosen else None,
                    headers=_headers_of(_column(part, plan, "headers")) if headers is not None
                    else None))
            continue
        futures.append(producer.send_batch(
            topic, values, keys=keys, partitions=partitions,
            headers=_headers_of(headers) if headers is not None else None))
    return futures


def _settle(futures: list, wait_s: float) -> dict[int, int]:
    """Wait for every future; records per Kafka partition.  The first failed record raises."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkacore.spark.writers import _int_array

    counts: collections.Counter[int] = collections.Counter()
    for future in futures:
        result = future.result(wait_s)
        if result.failed:
            raise next(e for e in result.errors if e is not None)
        for item in pc.value_counts(_int_array(result.partitions, pa.int32())).to_pylist():
            counts[item["values"]] += item["counts"]
    return dict(counts)


def _write_at_least_once(plan: SinkPlan, batches: Iterator[Any], context: Any) -> SinkCommitMessage:
    from kafkacore.spark.writers import get_producer

    cpu = time.process_time()
    producer = None
    futures: list = []
    records = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        if producer is None:
            producer = get_producer(plan.config)
        futures.extend(_send(producer, plan, batch))
        records += batch.num_rows
        _fault("sending", context)
    counts: dict[int, int] = {}
    if producer is not None:
        producer.flush(plan.wait_s)
        counts = _settle(futures, plan.wait_s)
        _fault("flushed", context)
    return SinkCommitMessage(context.partitionId(), records, False, counts,
                             time.process_time() - cpu)


def _write_exactly_once(plan: SinkPlan, name: str, epoch: int, batches: Iterator[Any],
                        context: Any) -> SinkCommitMessage:
    """One task's rows in one transaction with its completion mark; nothing if the mark of
    ``epoch`` is already committed.  The order is what makes it safe (see the module)."""
    from kafkacore.producer import KafkaProducer
    from kafkacore.spark.writers import _committed_mark

    cpu = time.process_time()
    first, batches = _first_rows(batches)
    if first is None:
        # No rows, no transaction: a replay of this task has no rows either.
        return SinkCommitMessage(context.partitionId(), 0, False, {}, time.process_time() - cpu)
    # The mark lives on partition 0 of a topic this task writes to (the broker keeps offsets
    # only for partitions that exist): the option's, or the first row's.  A replay reads the
    # same rows (Spark replays a micro-batch's offsets), so it looks at the same place.
    mark_topic = plan.topic or _column(first, plan, "topic")[0].as_py()
    producer = KafkaProducer({**plan.config, "transactional.id": name})
    try:
        producer.init_transactions(plan.wait_s)  # fences every earlier attempt, settles its txn
        mark = _committed_mark(plan.config, plan.wait_s, name, mark_topic)
        if mark is not None and mark[0] > epoch:
            for _ in batches:  # an earlier attempt committed these rows: drain, write nothing
                pass
            counts = json.loads(mark[1]) if mark[1] else {}
            return SinkCommitMessage(context.partitionId(), sum(counts.values()), True,
                                     {int(p): n for p, n in counts.items()},
                                     time.process_time() - cpu)
        _fault("begun", context)
        producer.begin_transaction()
        futures: list = []
        records = 0
        for batch in batches:
            if batch.num_rows:
                futures.extend(_send(producer, plan, batch))
                records += batch.num_rows
                _fault("sending", context)
        producer.flush(plan.wait_s)
        counts = _settle(futures, plan.wait_s)
        metadata = json.dumps({str(p): n for p, n in sorted(counts.items())},
                              separators=(",", ":"))
        producer.send_offsets_to_transaction(
            {(mark_topic, 0): (epoch + 1, metadata if len(metadata) <= 3000 else None)},
            name, plan.wait_s)
        _fault("flushed", context)
        producer.commit_transaction(plan.wait_s)
        _fault("committed", context)
    except BaseException:
        try:  # end our transaction now, not at transaction.timeout.ms (the next attempt would)
            producer.abort_transaction(1.0)
        except Exception:  # fenced, or never begun: the next init_transactions settles it
            pass
        raise
    finally:
        producer.close(0)
    return SinkCommitMessage(context.partitionId(), records, False, counts,
                             time.process_time() - cpu)


def _fence(plan: SinkPlan, names: list[str]) -> None:
    """Abort what failed tasks left open (an init_transactions with each of their ids), so that
    read_committed consumers are not held up to transaction.timeout.ms."""
    from kafkacore.producer import KafkaProducer

    for name in names:
        try:
            producer = KafkaProducer({**plan.config, "transactional.id": name})
            try:
                producer.init_transactions(plan.wait_s)
            finally:
                producer.close(0)
        except Exception:  # best effort: the broker's transaction timeout ends them anyway
            log.warning("could not fence transactional id %r", name, exc_info=True)


def _task_context() -> Any:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the kafkacore sink writes only inside a Spark task")
    return context


# ---------------------------------------------------------------------------------------------
# The writers Spark calls
# ---------------------------------------------------------------------------------------------

try:
    from pyspark.sql.datasource import DataSourceArrowWriter as _BatchBase
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamBase
except ImportError:  # pragma: no cover - without PySpark (docs) or before PySpark 4.1
    try:
        from pyspark.sql.datasource import DataSourceStreamWriter as _StreamBase
        from pyspark.sql.datasource import DataSourceWriter as _BatchBase
    except ImportError:
        _BatchBase = _StreamBase = object  # type: ignore[misc,assignment]


class KafkaBatchWriter(_BatchBase):  # type: ignore[misc,valid-type]
    """``df.write.format("kafkacore")``: the rows of one write job.

    Exactly once per job: the job gets a new id here, on the driver, and Spark's task retries
    and speculative attempts within it write each partition once.  Running the job again writes
    again (as a second ``save()`` does with any sink)."""

    def __init__(self, options: Mapping[str, str], schema: Any, overwrite: bool = False) -> None:
        self.plan = sink_plan(options, schema)
        self.write_id = uuid.uuid4().hex

    def _name(self, partition_id: int) -> str:
        return f"{self.plan.prefix}-{self.write_id}-{partition_id}"

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        context = _task_context()
        if self.plan.guarantee == AT_LEAST_ONCE:
            return _write_at_least_once(self.plan, iterator, context)
        return _write_exactly_once(self.plan, self._name(context.partitionId()), 0, iterator,
                                   context)

    def commit(self, messages: list) -> None:
        log.info("kafkacore sink: %d records written by %d tasks",
                 sum(m.records for m in messages if m is not None), len(messages))

    def abort(self, messages: list) -> None:
        if self.plan.guarantee == EXACTLY_ONCE:
            _fence(self.plan, [self._name(i) for i, m in enumerate(messages) if m is None])


class KafkaStreamWriter(_StreamBase):  # type: ignore[misc,valid-type]
    """``df.writeStream.format("kafkacore")``: the rows of each micro-batch.

    The transactional id of a task is ``<prefix>-<query id>-<Spark partition>``: the query id
    is kept in the checkpoint, so the query restarted from it uses the same ids, and a replayed
    micro-batch finds the marks of the tasks that had committed."""

    def __init__(self, options: Mapping[str, str], schema: Any, overwrite: bool = False) -> None:
        self.plan = sink_plan(options, schema)

    def _name(self, query_id: str, partition_id: int) -> str:
        return f"{self.plan.prefix}-{query_id}-{partition_id}"

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        context = _task_context()
        if self.plan.guarantee == AT_LEAST_ONCE:
            return _write_at_least_once(self.plan, iterator, context)
        # Spark's micro-batch execution sets both on every task of the batch.
        query_id = context.getLocalProperty("sql.streaming.queryId")
        batch_id = context.getLocalProperty("streaming.sql.batchId")
        if query_id is None or batch_id is None:
            raise RuntimeError("the kafkacore streaming sink runs in micro-batch queries only "
                               "(no query or batch id in the task: continuous processing?)")
        return _write_exactly_once(self.plan, self._name(query_id, context.partitionId()),
                                   int(batch_id), iterator, context)

    def commit(self, messages: list, batchId: int) -> None:
        # Every task committed its own transaction already; Spark writes its commit log next.
        _fault(f"commit:{batchId}")
        log.info("kafkacore sink: batch %d, %d records", batchId,
                 sum(m.records for m in messages if m is not None))

    def abort(self, messages: list, batchId: int) -> None:
        # Failed tasks may hold open transactions; the query id is not known here (no task
        # context on the driver), but each message's writer knew it: fence only what we can
        # name.  The next attempt of the batch fences the rest.
        return None
