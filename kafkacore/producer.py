"""KafkaProducer: the public face (the Java producer's ``KafkaProducer.doSend``, on the user's thread).

``send()`` runs on the caller's thread: serialize, wait for the topic's metadata, choose a
partition, append to the accumulator, and wake the Sender if a batch is ready.  Everything after
that happens on the Sender thread, which completes each record's future and runs its callback.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafkacore.accumulator import RecordAccumulator
from kafkacore.compat.librdkafka import attach as attach_librdkafka
from kafkacore.config import ProducerConfig
from kafkacore.core import BufferPool
from kafkacore.core.appender import RecordAppender
from kafkacore.core.batch import BatchFuture, FutureRecordMetadata, RecordMetadata
from kafkacore.delivery import DeliveredMessage
from kafkacore.errors import IllegalStateError, KafkaTimeoutError
from kafkacore.metadata import Metadata
from kafkacore.metrics import Metrics
from kafkacore.network import sasl, tls
from kafkacore.network.client import NetworkClient
from kafkacore.sender import Sender
from kafkacore.serialization import adapt_serializer
from kafkacore.transaction_manager import ConsumerGroupMetadata, TransactionManager

log = logging.getLogger("kafkacore")

#: A record's headers: (name, value) pairs, or a mapping of name to value as confluent-kafka
#: takes them; a value may be None, and a str value is sent as UTF-8.
Headers = (Iterable[tuple[str, str | bytes | bytearray | memoryview | None]]
           | Mapping[str, str | bytes | bytearray | memoryview | None])
#: ``callback(metadata, exception)``: exactly one of the two is None.  Records fail with an
#: ``Exception`` (a :class:`~kafkacore.errors.KafkaError`), so a callback annotated
#: ``Exception | None`` type-checks, and so does one annotated ``BaseException | None``.
SendCallback = Callable[[RecordMetadata | None, Exception | None], object]
#: confluent-kafka's ``on_delivery(err, msg)``.
DeliveryCallback = Callable[[Exception | None, DeliveredMessage], object]

_client_ids = itertools.count(1)

# Producers not yet closed, for the exit hook (weak: a producer dropped early is not kept alive).
_live_producers: weakref.WeakSet[KafkaProducer] = weakref.WeakSet()


@atexit.register
def _close_producers_at_exit() -> None:
    """The interpreter is exiting and nobody closed these producers: give each up to its
    ``close.timeout.at.exit.ms`` to deliver what it holds (the Sender is a daemon thread, so
    without this its records would vanish with it), and say what was lost."""
    for producer in list(_live_producers):
        producer._close_at_exit()


# What forked children inherited from their parent's producers (pools, accumulators, sockets,
# Sender objects): referenced for good and never used, so that no finaliser ever runs on them in
# the child (a lock or a pthread mutex held by a parent thread at the fork is never released; a
# socket's buffered bytes are the parent's).  Copy-on-write: it costs the child little.
_inherited_at_fork: list[Any] = []
# Inherited producers not used yet in this process: a fork from here passes them on again.
_not_started_after_fork: weakref.WeakSet[KafkaProducer] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child inherits the parent's producers but not their Sender threads: each starts
    afresh on first use.  Only attribute stores and new locks here (another parent thread may
    have held a lock at the fork).  The parent's queued records stay the parent's: the child
    never sends them."""
    producers = [*_live_producers, *_not_started_after_fork]
    _live_producers.clear()
    for producer in producers:
        producer._start_afresh_on_first_use()


os.register_at_fork(after_in_child=_after_fork_in_child)


class KafkaProducer:
    """Send records to Kafka.

    ``KafkaProducer({"bootstrap.servers": "host:9092", "linger.ms": 5})`` or
    ``KafkaProducer(bootstrap_servers="host:9092", linger_ms=5)``: settings by their Java names,
    or as keywords with underscores.  Unknown keys and bad values raise
    :class:`~kafkacore.errors.ConfigError` naming the key.

    A producer is safe to share between threads, and meant to be: one producer per process gives
    the fullest batches.  A forked child (``os.fork``, a ``fork`` multiprocessing pool, gunicorn
    ``--preload``) that uses a producer it inherited gets a fresh one, with its own connections
    and I/O thread; what the parent had queued stays the parent's.
    """

    def __init__(self, config: dict[str, Any] | None = None, **settings: Any) -> None:
        cfg = ProducerConfig(config, **settings)
        self.config = cfg
        self.client_id = cfg["client.id"] or f"kafkacore-producer-{next(_client_ids)}"
        self._max_block_ms: int = cfg["max.block.ms"]
        self._interceptors: list[Any] = list(cfg["interceptor.classes"] or ())
        self._build()
        self._use_compiled_send()  # self.send may now be RecordAppender.send (see send())

    def _build(self) -> None:
        """Everything a producer runs on: the pool, the accumulator, the network client, the
        Sender thread.  Made once by ``__init__``, and once more by a forked child that uses an
        inherited producer (``_start_afresh``)."""
        cfg = self.config
        self._closed = False
        self._pid = os.getpid()
        self._close_lock = threading.Lock()
        self._metrics = Metrics()
        # batch.size=0 (Java: no batching) still needs a positive poolable size.
        self._pool = BufferPool(cfg["buffer.memory"], max(cfg["batch.size"], 1))
        idempotent = cfg["enable.idempotence"]
        self._transaction_manager = TransactionManager(
            cfg["transactional.id"], cfg["transaction.timeout.ms"]) if idempotent else None
        # A transactional producer's TransactionManager, for send()'s one per-record test
        # (Java's failIfNotReadyForSend); None otherwise.
        self._transactional = self._transaction_manager if cfg["transactional.id"] is not None else None
        codec = cfg["compression.type"]
        self._accumulator = RecordAccumulator(
            batch_size=cfg["batch.size"],
            compression=codec,
            compression_level=cfg[f"compression.{codec}.level"]
            if codec in ("gzip", "lz4", "zstd")
            else None,
            linger_ms=cfg["linger.ms"],
            retry_backoff_ms=cfg["retry.backoff.ms"],
            retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
            delivery_timeout_ms=cfg["delivery.timeout.ms"],
            pool=self._pool,
            transaction_manager=self._transaction_manager,
            adaptive_partitioning=cfg["partitioner.adaptive.partitioning.enable"],
            partition_availability_timeout_ms=cfg["partitioner.availability.timeout.ms"],
        )
        self._metadata = Metadata(
            refresh_backoff_ms=cfg["retry.backoff.ms"],
            metadata_max_age_ms=cfg["metadata.max.age.ms"],
            metadata_max_idle_ms=cfg["metadata.max.idle.ms"],
        )
        # TLS and SASL are checked here, before any thread starts: a bad key file or a JAAS line
        # without a password is a ConfigError at construction, not a failure later.
        protocol = cfg["security.protocol"]
        ssl_context = tls.create_ssl_context(cfg) if protocol.endswith("SSL") else None
        sasl_mechanism = sasl.mechanism_factory(cfg) if protocol.startswith("SASL_") else None
        self._client = NetworkClient(
            [f"{host}:{port}" for host, port in cfg["bootstrap.servers"]],
            self._metadata,
            client_id=self.client_id,
            request_timeout_ms=cfg["request.timeout.ms"],
            reconnect_backoff_ms=cfg["reconnect.backoff.ms"],
            reconnect_backoff_max_ms=cfg["reconnect.backoff.max.ms"],
            socket_connection_setup_timeout_ms=cfg["socket.connection.setup.timeout.ms"],
            connections_max_idle_ms=cfg["connections.max.idle.ms"],
            send_buffer_bytes=cfg["send.buffer.bytes"],
            receive_buffer_bytes=cfg["receive.buffer.bytes"],
            max_in_flight_requests_per_connection=cfg["max.in.flight.requests.per.connection"],
            ssl_context=ssl_context,
            sasl_mechanism=sasl_mechanism,
        )
        self._sender = Sender(
            self._client,
            self._metadata,
            self._accumulator,
            acks=cfg["acks"],
            max_request_size=cfg["max.request.size"],
            request_timeout_ms=cfg["request.timeout.ms"],
            delivery_timeout_ms=cfg["delivery.timeout.ms"],
            retries=cfg["retries"],
            guarantee_message_order=cfg["max.in.flight.requests.per.connection"] == 1,
            transaction_manager=self._transaction_manager,
            metrics=self._metrics,
        )
        self._key_serializer = adapt_serializer(cfg["key.serializer"], "key")
        self._value_serializer = adapt_serializer(cfg["value.serializer"], "value")
        self._appender = self._new_appender(
            self._wait_on_metadata, cfg["max.block.ms"], self._key_serializer,
            self._value_serializer)
        self._metrics.gauge("buffer-available-bytes", self._pool.available_memory)
        self._metrics.gauge("buffer-total-bytes", lambda: cfg["buffer.memory"])
        self._metrics.gauge("waiting-threads", self._pool.queued)
        # Java's: requests sent to the brokers and not answered yet.
        self._metrics.gauge("requests-in-flight", self._client.in_flight_request_count)
        self._sender.start(f"kafka-producer-network-thread | {self.client_id}")
        # librdkafka's settings with a meaning here (stats_cb, throttle_cb, debug, ...).
        self._librdkafka = attach_librdkafka(self)
        _live_producers.add(self)

    # compiled send: start
    def _use_compiled_send(self) -> None:
        """With no interceptor and no transaction, nothing in send() runs in Python before the
        append: the producer's ``send`` is then its appender's compiled one (same arguments,
        checks and errors), one Python frame less per record.  A subclass that overrides
        ``send`` keeps its own."""
        if (type(self).send is _PYTHON_SEND and not self._interceptors
                and self._transactional is None):
            # An instance attribute shadows the method: the class's send stays the documented
            # one, and says there that it is replaced.
            self.send = self._appender.send  # type: ignore[method-assign]
    # compiled send: end

    def _new_appender(
        self,
        wait_on_metadata: Callable[[str, int | None], Any],
        max_block_ms: int,
        key_serializer: Callable[[str, Any], Any] | None,
        value_serializer: Callable[[str, Any], Any] | None,
    ) -> RecordAppender:
        """A RecordAppender over this producer's accumulator, metadata and Sender (send()'s, and
        the two that kafkacore.aio adds: one that never blocks, one for its worker threads)."""
        cfg = self.config
        return RecordAppender(
            batches=self._accumulator.batches,
            accumulator=self._accumulator,
            metadata=self._metadata,
            wait_on_metadata=wait_on_metadata,
            wakeup=self._sender.wakeup,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
            custom_partitioner=cfg["partitioner.class"],
            ignore_keys=cfg["partitioner.ignore.keys"],
            max_request_size=cfg["max.request.size"],
            total_memory=cfg["buffer.memory"],
            max_block_ms=max_block_ms,
            sticky_factory=self._accumulator.built_in_partitioner,
        )

    # -- sending ----------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
        callback: SendCallback | None = None,
        *,
        on_delivery: DeliveryCallback | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record; return its future (a :class:`~kafkacore.core.FutureRecordMetadata`).

        ``callback(metadata, exception)``, if given, runs exactly once on the producer's I/O
        thread when the record is acknowledged or fails, in send order per partition.  Bad
        arguments raise at once; a record larger than ``max.request.size`` raises
        :class:`~kafkacore.errors.RecordTooLargeError`; waiting for metadata or buffer memory
        longer than ``max.block.ms`` raises :class:`~kafkacore.errors.KafkaTimeoutError`.

        For code written for the other clients: ``on_delivery(err, msg)`` is confluent-kafka's
        order (error first; ``msg`` has ``topic()``, ``partition()``, ``offset()``, ``key()``,
        ``value()``, see :class:`~kafkacore.delivery.DeliveredMessage`), and ``timestamp_ms`` is
        kafka-python's name for ``timestamp``.

        Which code runs: a producer with no ``interceptor.classes`` and no ``transactional.id``
        has nothing to do in Python before the append, so at construction its ``send`` is
        replaced by its appender's compiled one, ``RecordAppender.send`` in
        ``kafkacore/core/appender.pyx`` (same arguments, checks and errors; one Python frame
        less per record: see ``_use_compiled_send``).  This body runs for the others, and
        for a subclass that overrides ``send``.
        """
        txn = self._transactional
        if txn is not None and not txn.sending_allowed:
            txn.fail_if_not_ready_for_send()
        if on_delivery is not None or timestamp_ms is not None:
            callback, timestamp = _other_clients(
                topic, value, key, timestamp, headers, callback, on_delivery, timestamp_ms)
        if self._interceptors:
            topic, value, key, partition, timestamp, headers = self._on_send(
                topic, value, key, partition, timestamp, headers
            )
            callback = self._with_acknowledgement(callback)
        return self._appender.append(topic, value, key, partition, timestamp, headers, callback)

    def send_batch(
        self,
        topic: str,
        values: Any,
        keys: Any = None,
        partitions: Sequence[int | None] | None = None,
        timestamps: Sequence[int | None] | None = None,
        headers: Sequence[Headers | None] | None = None,
    ) -> BatchFuture:
        """Queue whole columns of records; return one :class:`~kafkacore.core.BatchFuture`.

        ``values`` and ``keys`` are columns: Python lists (of bytes, bytearray, str — sent as
        UTF-8 — or None) or pyarrow arrays of binary, large_binary, string or large_string, read
        straight from their Arrow buffers without a Python object per row.  ``partitions`` and
        ``timestamps`` (ints, or None for "now") and ``headers`` (one header list or None per
        row) are optional columns of the same length.  Serializers and interceptors do not
        apply: the columns are the records' bytes.

        Every guarantee of :meth:`send` holds: each row goes to the partition ``send`` would
        choose, in call order per partition, under the same memory and time bounds.  Bad input
        raises before any row is queued.  If memory or time runs out part-way, the rows not
        queued fail in the result; the others are sent.  The future resolves, once every row is
        acknowledged or failed, to a :class:`~kafkacore.core.BatchResult` with each row's
        partition, offset and error.
        """
        txn = self._transactional
        if txn is not None and not txn.sending_allowed:
            txn.fail_if_not_ready_for_send()
        return self._appender.append_columns(topic, values, keys, partitions, timestamps, headers)

    def _wait_on_metadata(
        self, topic: str, partition: int | None, max_wait_ms: int | None = None
    ) -> Any:
        """A cluster view that knows ``topic`` (and ``partition``): at once if we know it, else
        after the Sender has fetched it, waiting at most ``max_wait_ms`` (as Java's ``waitOnMetadata``: the slow
        path of ``send()``: the compiled appender calls it for a topic it has no count for)."""
        cluster = self._metadata.cluster
        count = cluster.partition_count(topic)
        if count and (partition is None or partition < count):
            return cluster
        if max_wait_ms is None:
            max_wait_ms = self._max_block_ms
        cluster, _waited = self._metadata.wait_for_topic(
            topic, partition, max_wait_ms=max_wait_ms, wakeup=self._sender.wakeup
        )
        return cluster

    # -- interceptors -----------------------------------------------------------------------

    def _on_send(
        self, topic: str, value: Any, key: Any, partition: int | None, timestamp: int | None,
        headers: Any,
    ) -> tuple[str, Any, Any, int | None, int | None, Any]:
        for interceptor in self._interceptors:
            try:
                changed = interceptor.on_send(topic, value, key, partition, timestamp, headers)
            except Exception:
                log.exception(
                    "interceptor %r on_send failed; record passed on unchanged", interceptor
                )
                continue
            if changed is not None:
                topic, value, key, partition, timestamp, headers = changed
        return topic, value, key, partition, timestamp, headers

    def _with_acknowledgement(self, callback: SendCallback | None) -> SendCallback:
        interceptors = self._interceptors

        def acknowledged(metadata: RecordMetadata | None, exception: Exception | None) -> None:
            for interceptor in interceptors:
                try:
                    interceptor.on_acknowledgement(metadata, exception)
                except Exception:
                    log.exception("interceptor %r on_acknowledgement failed", interceptor)
            if callback is not None:
                callback(metadata, exception)

        return acknowledged

    # -- transactions (Java's KafkaProducer, KIP-98) -----------------------------------------

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register ``transactional.id`` with its coordinator, once, before the first
        transaction: get a producer id and a new epoch, which fences any older producer with
        the same id, and have the coordinator finish what such a producer left open.

        Every transactional call takes ``timeout`` in seconds (default ``max.block.ms``); past
        it, :class:`~kafkacore.errors.KafkaTimeoutError`, and the same call made again waits
        for the same request.
        """
        self._await_transactional(self._txn().initialize_transactions(), timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now until commit or abort belong to it."""
        self._txn().begin_transaction()

    def send_offsets_to_transaction(
        self, offsets: Any, group_metadata: Any, timeout: float | None = None
    ) -> None:
        """Commit a consumer group's offsets as part of the transaction (consume-transform-
        produce): they count only if it commits.

        ``offsets``: a dict ``{TopicPartition or (topic, partition): offset}`` (the offset of the
        next record to read; an ``OffsetAndMetadata`` or ``(offset, metadata)`` also do), or
        confluent-kafka's list of ``TopicPartition`` with offsets (``consumer.position(...)``).
        ``group_metadata``: :class:`~kafkacore.transaction_manager.ConsumerGroupMetadata`,
        confluent-kafka's ``consumer.consumer_group_metadata()``, kafka-python's
        ``consumer.group_metadata()``, or a group id.
        """
        group = ConsumerGroupMetadata.of(group_metadata)
        result = self._txn().send_offsets_to_transaction(_offsets(offsets), group)
        self._await_transactional(result, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: every record of the transaction is sent and acknowledged first,
        then the coordinator writes the commit markers.  An error that failed the transaction
        raises here; :meth:`abort_transaction` is then the way on."""
        self._await_transactional(self._txn().begin_commit(), timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: records not yet sent fail with
        :class:`~kafkacore.errors.TransactionAbortedError`, what was written is marked aborted,
        and read_committed consumers never see it."""
        self._await_transactional(self._txn().begin_abort(), timeout)

    def _txn(self) -> TransactionManager:
        if self._closed:
            raise IllegalStateError("the producer is closed")
        tm = self._transaction_manager
        if tm is None or tm.transactional_id is None:
            raise IllegalStateError(
                "transactional method called on a producer without a transactional.id")
        return tm

    def _await_transactional(self, result: Any, timeout: float | None) -> None:
        if threading.current_thread() is self._sender.thread:
            raise IllegalStateError("a transactional call from a callback would wait for itself")
        self._sender.wakeup()
        result.await_(self._max_block_ms / 1000 if timeout is None else timeout)

    # -- flush, close, questions ------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is acked or failed.

        ``timeout`` in seconds (``None``: no bound but delivery.timeout.ms, which ends every
        record); past it, :class:`~kafkacore.errors.KafkaTimeoutError`.
        """
        if threading.current_thread() is self._sender.thread:
            raise IllegalStateError("flush() from a callback would wait for itself")
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            self._accumulator.await_flush_completion(None if timeout is None else timeout * 1000)
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued and stop.  With ``timeout`` (seconds), whatever is still not
        acknowledged by then fails with an error; ``close(0)`` fails it at once."""
        with self._close_lock:
            already = self._closed
            self._closed = True
            self._appender.closed = True
        if not already:
            self._librdkafka.close()  # statistics and log forwarding stop with the producer
        in_callback = threading.current_thread() is self._sender.thread
        if in_callback:
            # The I/O thread cannot wait for itself: stop it without waiting (Java does the same).
            self._sender.force_close()
            return
        if not already:
            if timeout is not None and timeout <= 0:
                self._sender.force_close()
            else:
                self._sender.initiate_close()
                if not self._sender.stopped.wait(timeout):
                    self._sender.force_close()
            self._metadata.close()
        # After a forced close the loop ends within one poll; bound the wait all the same.
        if not self._sender.stopped.wait(max(self.config["request.timeout.ms"] / 1000, 1.0)):
            log.error("the kafkacore sender thread did not stop")
        if not already:
            for interceptor in self._interceptors:
                closer = getattr(interceptor, "close", None)
                if closer is not None:
                    closer()

    def _start_afresh_on_first_use(self) -> None:
        """In a forked child (from the at-fork hook): the producer's public methods are shadowed
        by instance attributes that build a fresh producer on first use (the parent's hot path
        pays nothing).  A producer the parent had closed stays closed."""
        if self._closed and self not in _not_started_after_fork:
            return  # closed by its owner before the fork
        self._closed = True  # until it starts afresh: __del__ has nothing to stop in the child
        _not_started_after_fork.add(self)
        start_lock = threading.Lock()  # new: nothing of the parent's can hold it

        def first_use(name: str) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                with start_lock:
                    if self.__dict__.get(name) is call:  # the first caller starts the producer
                        self._start_afresh()
                return getattr(self, name)(*args, **kwargs)

            return call

        def closed(*_args: Any, **_kwargs: Any) -> Any:
            raise IllegalStateError("the producer is closed")

        def close_before_use(timeout: float | None = None) -> None:
            # Nothing of the child's to send: closed for good, without ever starting.
            with start_lock:
                _not_started_after_fork.discard(self)
                for name in _FORK_SHADOWED:
                    setattr(self, name, closed)

        for name in _FORK_SHADOWED:
            setattr(self, name, first_use(name))
        self.close = close_before_use  # type: ignore[method-assign]

    def _start_afresh(self) -> None:
        """The first use of an inherited producer in a forked child: its own pool, accumulator,
        connections and Sender thread, from the same configuration.  What the parent queued
        stays behind, untouched (``_inherited_at_fork``)."""
        _inherited_at_fork.append(
            (self._pool, self._accumulator, self._metadata, self._client, self._sender,
             self._appender, self._transaction_manager)
        )
        parent = self._pid
        _not_started_after_fork.discard(self)
        self._build()
        for name in (*_FORK_SHADOWED, "close"):
            self.__dict__.pop(name, None)
        self._use_compiled_send()
        log.info("producer %s inherited by fork from process %d starts afresh in process %d",
                 self.client_id, parent, self._pid)

    def _close_at_exit(self) -> None:
        if self._closed:
            return
        timeout_ms = self.config["close.timeout.at.exit.ms"]
        try:
            self.flush(timeout_ms / 1000)
        except KafkaTimeoutError:
            pass
        never_sent, unknown = self._accumulator.undelivered_record_counts()
        if never_sent or unknown:
            # Two numbers, not one: a record sent and unanswered may well be in the log, and
            # whoever resends "the lost records" would duplicate it.
            log.warning(
                "kafkacore producer %s: %d records not acknowledged when the interpreter exited "
                "(close.timeout.at.exit.ms=%d): %d failed, never sent (not written); %d unknown, "
                "sent with no answer (the broker may have written them: resending them may "
                "duplicate them); call flush() or close() before exiting",
                self.client_id, never_sent + unknown, timeout_ms, never_sent, unknown,
            )
        self.close(0)

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def partitions_for(self, topic: str) -> list[int]:
        """The partition numbers of ``topic``, waiting for metadata up to ``max.block.ms``."""
        if self._closed:
            raise IllegalStateError("the producer is closed")
        cluster = self._wait_on_metadata(topic, None, self._max_block_ms)
        return sorted(p.partition for p in cluster.partitions_for_topic(topic))

    def metrics(self) -> dict[str, float]:
        """A snapshot of the producer's metrics, named as the Java producer names them."""
        m = self._metrics
        out: dict[str, Any] = {
            "record-send-rate": m.rate("record-send"),
            "batch-size-avg": m.avg("batch-size"),
            "batch-size-max": m.max("batch-size"),
            "records-per-request-avg": m.avg("records-per-request"),
            "record-queue-time-avg": m.avg("record-queue-time"),
            "record-queue-time-max": m.max("record-queue-time"),
            "request-latency-avg": m.avg("request-latency"),
            "request-latency-max": m.max("request-latency"),
            "request-rate": m.rate("request-latency"),
            "record-retry-rate": m.rate("record-retry"),
            "record-error-rate": m.rate("record-error"),
            "batch-split-rate": m.rate("batch-split"),
        }
        out.update(m.gauges())
        return out

    def __del__(self) -> None:
        # A producer dropped without close(): stop its thread so the interpreter can exit.
        if not getattr(self, "_closed", True) and hasattr(self, "_sender"):
            self._sender.force_close()


__all__ = ["KafkaProducer"]

# The methods that start an inherited producer afresh in a forked child.
# The Python send(), to tell whether a subclass overrides it (_use_compiled_send).
_PYTHON_SEND = KafkaProducer.send

_FORK_SHADOWED = ("send", "send_batch", "flush", "partitions_for", "metrics")


def _offsets(offsets: Any) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    """send_offsets_to_transaction's offsets in every client's shape, as
    (topic, partition) -> (offset, metadata, leader epoch)."""
    if isinstance(offsets, dict):
        items = list(offsets.items())
    else:  # confluent-kafka: TopicPartition objects that carry their offsets
        items = [((tp.topic, tp.partition), tp) for tp in offsets]
    out: dict[tuple[str, int], tuple[int, str | None, int]] = {}
    for tp, value in items:
        if isinstance(tp, tuple):
            topic, partition = tp[0], tp[1]
        else:
            topic, partition = tp.topic, tp.partition
        metadata, epoch = None, -1
        offset: Any
        if isinstance(value, int) and not isinstance(value, bool):
            offset = value
        elif isinstance(value, tuple) and not hasattr(value, "offset"):
            offset, metadata = value[0], value[1] if len(value) > 1 else None
        else:  # OffsetAndMetadata (kafka-python) or TopicPartition (confluent-kafka)
            offset = getattr(value, "offset", None)
            metadata = getattr(value, "metadata", None)
            leader_epoch = getattr(value, "leader_epoch", None)
            epoch = -1 if leader_epoch is None else leader_epoch
        if not isinstance(topic, str) or not isinstance(partition, int) or not isinstance(
                offset, int) or offset < 0:
            raise ValueError(f"not a partition and an offset to commit: {tp!r} -> {value!r}")
        out[(topic, partition)] = (offset, metadata, epoch)
    if not out:
        raise ValueError("no offsets to send")
    return out


def _other_clients(
    topic: str, value: Any, key: Any, timestamp: int | None, headers: Any,
    callback: SendCallback | None, on_delivery: DeliveryCallback | None,
    timestamp_ms: int | None,
) -> tuple[SendCallback | None, int | None]:
    """The callback and timestamp of a send() that used confluent-kafka's or kafka-python's names."""
    if timestamp_ms is not None:
        if timestamp is not None:
            raise TypeError("give timestamp or timestamp_ms (its kafka-python name), not both")
        timestamp = timestamp_ms
    if on_delivery is not None:
        if callback is not None:
            raise TypeError("give callback(metadata, exception) or on_delivery(err, msg), not both")
        if not callable(on_delivery):
            raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")

        deliver = on_delivery

        def confluent_order(
            metadata: RecordMetadata | None, exception: Exception | None
        ) -> None:
            deliver(exception, DeliveredMessage(topic, key, value, headers, metadata, exception))

        callback = confluent_order

    return callback, timestamp
