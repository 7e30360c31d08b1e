"""confluent-kafka's ``Producer``, on kafkacore: change the import, keep the script.

>>> from kafkacore.compat.confluent import Producer        # doctest: +SKIP
>>> p = Producer({"bootstrap.servers": "localhost:9092"})
>>> p.produce("orders", "a value", key="k", callback=lambda err, msg: print(err, msg.offset()))
>>> p.flush()                                           # serves the callback; 0 left
0

The semantics are confluent-kafka's, not :class:`~kafkacore.producer.KafkaProducer`'s:

* delivery callbacks are ``callback(err, msg)`` (``on_delivery`` is the same argument), with
  ``err`` a :class:`KafkaError` or ``None`` and ``msg`` a :class:`Message`; they run on the
  thread that calls :meth:`Producer.poll` or :meth:`Producer.flush`, never on the I/O thread;
* :meth:`Producer.flush` returns the number of messages still waiting, ``len(producer)`` counts
  the messages not delivered plus the delivery reports not yet served, and
  :meth:`Producer.produce` raises ``BufferError`` when that count reaches
  ``queue.buffering.max.messages``;
* ``str`` keys, values and header values are sent as UTF-8; headers may be a dict or a list of
  pairs.

Every librdkafka producer setting is accepted (see docs/migration.rst): librdkafka's names of
kafkacore's settings (``queue.buffering.max.ms`` is ``linger.ms``, ...), the ones with a
meaning here mapped (``statistics.interval.ms`` with ``stats_cb``, ``throttle_cb``,
``error_cb``, ``debug``, ``partitioner``, ...; their callbacks are served by
:meth:`Producer.poll` and :meth:`Producer.flush`), and the rest named in one warning.  Records
are partitioned as Java does (murmur2, librdkafka's ``murmur2_random``), not as librdkafka's
default (``consistent_random``, CRC32), unless ``partitioner`` says otherwise.  :meth:`Producer.init_transactions` and the
other transactional calls are confluent's; :mod:`kafkacore.compat.confluent.aio` has
``AIOProducer``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from kafkacore import errors
from kafkacore.compat.kafka_error import KafkaError, KafkaException
from kafkacore.core.batch import RecordMetadata
from kafkacore.metadata import Cluster, Metadata
from kafkacore.producer import KafkaProducer

#: confluent-kafka's message timestamp types (``Message.timestamp()`` returns ``(type, ms)``).
TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME = 0, 1, 2

#: The offset of a message that was not written (librdkafka's ``RD_KAFKA_OFFSET_INVALID``).
OFFSET_INVALID = -1001

DeliveryCallback = Callable[["KafkaError | None", "Message"], object]


class Message:
    """What a delivery callback receives, with confluent-kafka's methods.  ``key()`` and
    ``value()`` are the bytes that were sent (a ``str`` given to ``produce`` comes back
    encoded)."""

    __slots__ = ("_topic", "_key", "_value", "_headers", "_metadata", "_error", "_latency")

    def __init__(self, topic: str, key: bytes | None, value: bytes | None, headers: Any,
                 metadata: RecordMetadata | None, error: KafkaError | None,
                 latency: float) -> None:
        self._topic, self._key, self._value, self._headers = topic, key, value, headers
        self._metadata, self._error, self._latency = metadata, error, latency

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        m = self._metadata
        return m.partition if m is not None and m.partition >= 0 else -1

    def offset(self) -> int:
        if self._error is not None or self._metadata is None or self._metadata.offset < 0:
            return OFFSET_INVALID
        return int(self._metadata.offset)

    def timestamp(self) -> tuple[int, int]:
        """``(TIMESTAMP_CREATE_TIME, ms)``, or ``(TIMESTAMP_NOT_AVAILABLE, 0)`` if it failed."""
        m = self._metadata
        if m is None or m.timestamp is None or m.timestamp < 0:
            return TIMESTAMP_NOT_AVAILABLE, 0
        return TIMESTAMP_CREATE_TIME, int(m.timestamp)

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        headers: list[tuple[str, bytes | None]] | None = self._headers
        return headers

    def error(self) -> KafkaError | None:
        return self._error

    def latency(self) -> float:
        """Seconds from ``produce()`` to the delivery report."""
        return self._latency

    def __len__(self) -> int:
        return len(self._value) if self._value is not None else 0

    def __repr__(self) -> str:
        return (f"Message(topic={self._topic!r}, partition={self.partition()}, "
                f"offset={self.offset()}, error={self._error!r})")


class PartitionMetadata:
    """One partition in :meth:`Producer.list_topics`' answer."""

    def __init__(self, id: int, leader: int, replicas: list[int], isrs: list[int],
                 error: KafkaError | None) -> None:
        self.id, self.leader, self.replicas, self.isrs, self.error = (
            id, leader, replicas, isrs, error)

    def __repr__(self) -> str:
        return f"PartitionMetadata({self.id})"


class TopicMetadata:
    """One topic in :meth:`Producer.list_topics`' answer: ``partitions`` by id."""

    def __init__(self, topic: str, partitions: dict[int, PartitionMetadata],
                 error: KafkaError | None) -> None:
        self.topic, self.partitions, self.error = topic, partitions, error

    def __repr__(self) -> str:
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return self.topic


class BrokerMetadata:
    """One broker in :meth:`Producer.list_topics`' answer."""

    def __init__(self, id: int, host: str, port: int) -> None:
        self.id, self.host, self.port = id, host, port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class ClusterMetadata:
    """:meth:`Producer.list_topics`' answer: ``brokers`` and ``topics`` by id and name."""

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: str | None = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"


#: Settings of confluent-kafka's Python layer (not librdkafka's), handled here.
_DEFAULT_MAX_MESSAGES = 100000


class Producer:
    """confluent-kafka's ``Producer(config)`` or ``Producer(**config)`` (see the module's doc).

    Besides kafkacore's settings, by their Java or librdkafka names, it takes confluent's
    ``on_delivery`` (a default delivery callback), ``queue.buffering.max.messages``,
    ``delivery.report.only.error``, ``error_cb`` (called from :meth:`poll` with a
    :class:`KafkaError` for each error kafkacore logs that belongs to no message: a broker
    that cannot be reached, a failed authentication) and ``logger`` (a ``logging.Logger``
    that receives kafkacore's log).
    """

    #: Run callbacks where they happen instead of in poll() (AIOProducer: they go to its loop).
    _serve_directly = False

    def __init__(self, config: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        conf = dict(config or {})
        conf.update(kwargs)  # confluent's own examples write Producer(**conf)
        self._default_callback: DeliveryCallback | None = conf.pop("on_delivery", None)
        if self._default_callback is None:
            self._default_callback = conf.pop("dr_cb", None)
        for name, cb in (("on_delivery", self._default_callback),
                         ("error_cb", conf.get("error_cb"))):
            if cb is not None and not callable(cb):
                raise TypeError(f"{name} must be callable, not {type(cb).__name__}")
        self._error_cb: Callable[[KafkaError], object] | None = conf.pop("error_cb", None)
        self._log_handler = _LogHandler(conf.pop("logger", None), self)
        self._only_errors = _truth(conf.pop("delivery.report.only.error", False))
        self._max_messages = int(conf.pop("queue.buffering.max.messages", _DEFAULT_MAX_MESSAGES))
        if self._max_messages < 1:
            raise errors.ConfigError("'queue.buffering.max.messages' must be at least 1")
        # stats_cb and throttle_cb run where confluent runs them: in poll() and flush().
        for name in ("stats_cb", "throttle_cb"):
            callback = conf.get(name)
            if callback is not None:
                if not callable(callback):
                    raise TypeError(f"{name} must be callable, not {type(callback).__name__}")
                conf[name] = callback if self._serve_directly else self._served_by_poll(callback)
        self._cond = threading.Condition()
        # Guarded by _cond: errors for error_cb (the latest few: a broker down logs every
        # retry), statistics and throttle events, as (callback, argument).
        self._errors: deque[tuple[Callable[[Any], object], Any]] = deque(maxlen=100)
        self._producer = KafkaProducer(conf)
        # Guarded by _cond: delivery reports not yet served, and the messages not yet
        # delivered plus those reports (what len() says, and what the queue limit bounds).
        self._reports: deque[tuple[DeliveryCallback | None, KafkaError | None, Message]] = deque()
        self._outstanding = 0
        if self._error_cb is not None or self._log_handler.logger is not None:
            logging.getLogger("kafkacore").addHandler(self._log_handler)

    # -- producing ---------------------------------------------------------------------------

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                callback: DeliveryCallback | None = None,
                on_delivery: DeliveryCallback | None = None, timestamp: int = 0,
                headers: Any = None) -> None:
        """Queue one message; its delivery report is served by :meth:`poll` or :meth:`flush`.

        Raises ``BufferError`` when ``len(self)`` has reached ``queue.buffering.max.messages``,
        :class:`KafkaException` for other errors, ``TypeError`` for arguments of a wrong type.
        """
        if callback is not None and on_delivery is not None:
            raise TypeError("give callback or on_delivery (its alias), not both")
        report = on_delivery or callback or self._default_callback
        if report is not None and not callable(report):
            raise TypeError(f"callback must be callable, not {type(report).__name__}")
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        value, key = _as_bytes(value, "value"), _as_bytes(key, "key")
        headers = _headers(headers)
        with self._cond:
            if self._outstanding >= self._max_messages:
                raise BufferError("Local: Queue full")
            self._outstanding += 1
        began = time.monotonic()

        def delivered(metadata: RecordMetadata | None, exc: BaseException | None) -> None:
            err = None if exc is None else KafkaError(exc)
            msg = Message(topic, key, value, headers, metadata, err, time.monotonic() - began)
            if self._serve_directly:  # AIOProducer: straight to its event loop
                with self._cond:
                    self._outstanding -= 1
                    self._cond.notify_all()
                if report is not None and not (self._only_errors and err is None):
                    report(err, msg)
                return
            with self._cond:
                if report is not None and not (self._only_errors and err is None):
                    self._reports.append((report, err, msg))
                else:
                    self._outstanding -= 1
                self._cond.notify_all()

        try:
            self._producer.send(topic, value, key, None if partition in (-1, None) else partition,
                                None if not timestamp else timestamp, headers, delivered)
        except BaseException as exc:
            with self._cond:
                self._outstanding -= 1
            if isinstance(exc, (TypeError, BufferError, KeyboardInterrupt)):
                raise
            if isinstance(exc, errors.BufferExhaustedError):
                raise BufferError(f"Local: Queue full ({exc})") from exc
            if isinstance(exc, ValueError) and not isinstance(exc, errors.KafkaError):
                raise
            raise KafkaException(KafkaError(exc)) from exc

    def poll(self, timeout: float | None = -1) -> int:
        """Serve the delivery reports that are ready, waiting up to ``timeout`` seconds (-1 or
        None: without bound) for the first; returns how many were served.  An exception
        raised by a callback comes out of here, as in confluent-kafka."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with self._cond:
            while not self._reports and not self._errors:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return 0
                self._cond.wait(left)
        return self._serve()

    def _serve(self) -> int:
        served = 0
        while True:
            with self._cond:
                if self._errors:
                    event, argument = self._errors.popleft()
                    report = None
                elif self._reports:
                    report, err, msg = self._reports.popleft()
                    self._outstanding -= 1
                    self._cond.notify_all()
                else:
                    return served
            served += 1
            if report is None:
                event(argument)
            else:
                report(err, msg)

    def _client_error(self, error: KafkaError) -> None:
        """From the log handler (any thread): an error for ``error_cb``, served by poll()."""
        if self._error_cb is None:
            return
        if self._serve_directly:
            self._error_cb(error)
            return
        with self._cond:
            self._errors.append((self._error_cb, error))
            self._cond.notify_all()

    def _served_by_poll(self, callback: Callable[[Any], object]) -> Callable[[Any], None]:
        def queue(argument: Any) -> None:
            with self._cond:
                self._errors.append((callback, argument))
                self._cond.notify_all()

        return queue

    def flush(self, timeout: float | None = -1) -> int:
        """Send everything queued, wait (up to ``timeout`` seconds; -1 or None: without bound)
        until every message is delivered or failed, serving the delivery reports as they come.
        Returns ``len(self)``: 0 unless the time ran out."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        waiting = threading.Thread(target=self._flush_quietly,
                                   args=(None if deadline is None else max(timeout or 0, 0),),
                                   name="kafkacore-confluent-flush", daemon=True)
        waiting.start()  # it makes every batch ready at once; reports are served meanwhile
        while True:
            self._serve()
            with self._cond:
                if self._outstanding == 0:
                    return 0
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return self._outstanding
                if not self._reports:
                    self._cond.wait(left)

    def _flush_quietly(self, timeout: float | None) -> None:
        try:
            self._producer.flush(timeout)
        except errors.KafkaError:  # the caller's loop sees what is left and says so
            pass

    # -- transactions (confluent's names, on KafkaProducer's TransactionManager) --------------

    def init_transactions(self, timeout: float | None = -1) -> None:
        """Register ``transactional.id`` with its coordinator (fencing an older producer with
        the same id); once, before the first transaction.  ``timeout`` in seconds (-1 or
        None: ``max.block.ms``)."""
        self._transactional(self._producer.init_transactions, _seconds(timeout))

    def begin_transaction(self) -> None:
        """Start a transaction: what is produced from now until commit or abort belongs to it."""
        self._transactional(self._producer.begin_transaction)

    def send_offsets_to_transaction(self, positions: Any, group_metadata: Any,
                                    timeout: float | None = -1) -> None:
        """Commit a consumer's positions with the transaction.  ``positions``: a list of
        ``TopicPartition`` with offsets (``consumer.position(consumer.assignment())``, from
        confluent-kafka's consumer or ours); ``group_metadata``: the consumer's
        ``consumer_group_metadata()`` (confluent-kafka's) or a
        :class:`~kafkacore.transaction_manager.ConsumerGroupMetadata`."""
        if not isinstance(positions, (list, tuple, Mapping)):
            raise TypeError("positions must be a list of TopicPartition, not "
                            f"{type(positions).__name__}")
        self._transactional(self._producer.send_offsets_to_transaction, positions,
                            group_metadata, _seconds(timeout))

    def commit_transaction(self, timeout: float | None = -1) -> None:
        """Deliver every message of the transaction (serving their delivery reports, as
        :meth:`flush` does), then commit it.  A failure raises :class:`KafkaException`; if
        its error's ``txn_requires_abort()``, call :meth:`abort_transaction`."""
        seconds = _seconds(timeout)
        began = time.monotonic()
        if self.flush(-1 if seconds is None else seconds):
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_transaction: "
                                            "messages still undelivered at the timeout",
                                            retriable=True))
        left = None if seconds is None else max(seconds - (time.monotonic() - began), 0.0)
        self._transactional(self._producer.commit_transaction, left)

    def abort_transaction(self, timeout: float | None = -1) -> None:
        """Abort: messages not yet delivered fail (their reports come from :meth:`poll`), and
        what was written is marked aborted, unseen by read_committed consumers."""
        self._transactional(self._producer.abort_transaction, _seconds(timeout))
        self._serve()

    def _transactional(self, call: Callable[..., object], *args: Any) -> None:
        """``call``, with its failure as confluent reports it: a KafkaException whose
        KafkaError says whether to retry, abort, or give up (fatal)."""
        try:
            call(*args)
        except (TypeError, KeyboardInterrupt):
            raise
        except BaseException as exc:
            raise KafkaException(self._txn_error(exc)) from exc

    def _txn_error(self, exc: BaseException) -> KafkaError:
        tm = self._producer._transaction_manager
        fatal = tm is not None and tm.has_fatal_error()
        abortable = tm is not None and tm.has_abortable_error()
        if isinstance(exc, errors.KafkaTimeoutError):
            return KafkaError(KafkaError._TIMED_OUT, str(exc) or "timed out", retriable=True)
        if isinstance(exc, ValueError) and not isinstance(exc, errors.KafkaError):
            return KafkaError(KafkaError._INVALID_ARG, str(exc))
        if isinstance(exc, errors.IllegalStateError) and not (fatal or abortable):
            return KafkaError(KafkaError._STATE, str(exc))
        if isinstance(exc, (errors.ProducerFencedError, errors.InvalidProducerEpochError)):
            fatal = True
        return KafkaError(exc, fatal=fatal, retriable=False if fatal or abortable else None,
                          txn_requires_abort=abortable and not fatal)

    def __len__(self) -> int:
        with self._cond:
            return self._outstanding

    def __bool__(self) -> bool:
        return True  # not "empty": a producer is a producer, whatever len() says

    # -- questions and the end ---------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """The cluster's brokers and topics (``topic``: that one only)."""
        ms = 60000 if timeout is None or timeout < 0 else int(timeout * 1000)
        try:
            cluster = _describe(self._producer.config, topic, ms)
        except errors.KafkaError as exc:
            raise KafkaException(KafkaError(exc)) from exc
        answer = ClusterMetadata()
        answer.cluster_id, answer.controller_id = cluster.cluster_id, cluster.controller_id or -1
        for node in cluster.nodes:
            answer.brokers[node.node_id] = BrokerMetadata(node.node_id, node.host, node.port)
        names = [topic] if topic else sorted(cluster.topics)
        for name in names:
            partitions = {
                p.partition: PartitionMetadata(
                    p.partition, -1 if p.leader is None else p.leader, list(p.replicas),
                    list(p.isr), KafkaError(errors.for_code(p.error_code)())
                    if p.error_code else None)
                for p in cluster.partitions_for_topic(name)}
            code = cluster.topic_errors.get(name, 0)
            error = KafkaError(errors.for_code(code)()) if code else None
            if not partitions and error is None and name not in cluster.topics:
                error = KafkaError(errors.UnknownTopicOrPartitionError())
            answer.topics[name] = TopicMetadata(name, partitions, error)
        return answer

    def close(self, timeout: float | None = -1) -> bool:
        """Flush, serve the last delivery reports, and stop.  True when nothing was left."""
        left = self.flush(timeout)
        self._producer.close(0 if left else None)
        self._serve()
        logging.getLogger("kafkacore").removeHandler(self._log_handler)
        return left == 0

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _describe(config: Mapping[str, Any], topic: str | None, timeout_ms: int) -> Cluster:
    """One Metadata exchange over a connection of its own: ``topic``, or every topic."""
    from kafkacore.admin import refresh_metadata
    from kafkacore.network.client import NetworkClient, clock_ms

    metadata = Metadata(allow_auto_topic_creation=topic is not None)  # confluent's: it may
    if topic is None:
        metadata.all_topics = True
    else:
        metadata.add_topic(topic)
    bootstrap = [f"{host}:{port}" for host, port in config["bootstrap.servers"]]
    with NetworkClient(bootstrap, metadata, request_timeout_ms=timeout_ms) as client:
        return refresh_metadata(client, clock_ms() + timeout_ms)


class _LogHandler(logging.Handler):
    """kafkacore's log, passed on to confluent's ``logger``; its errors to ``error_cb``."""

    def __init__(self, logger: logging.Logger | None, producer: Producer) -> None:
        super().__init__()
        self.logger = logger
        self._producer = producer

    def emit(self, record: logging.LogRecord) -> None:
        if self.logger is not None:
            self.logger.handle(record)
        if record.levelno >= logging.ERROR:
            self._producer._client_error(KafkaError(KafkaError._FAIL, record.getMessage()))


def _seconds(timeout: float | None) -> float | None:
    """confluent's timeout (seconds; -1 or None: the default) as KafkaProducer's."""
    return None if timeout is None or timeout < 0 else float(timeout)


def _truth(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _as_bytes(data: Any, what: str) -> bytes | None:
    """confluent-kafka sends ``str`` as UTF-8 and bytes-like objects as they are."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be str, bytes or None, not {type(data).__name__}")


def _headers(headers: Any) -> list[tuple[str, bytes | None]] | None:
    """confluent-kafka's headers: a dict or a list of (name, value), values str, bytes or None."""
    if headers is None:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"headers must be a dict or (name, value) pairs, got {pair!r}") from None
        if not isinstance(name, str):
            raise TypeError(f"a header name must be a str, not {type(name).__name__}")
        out.append((name, _as_bytes(value, f"header {name!r}")))
    return out


__all__ = ["AIOProducer", "BrokerMetadata", "ClusterMetadata", "KafkaError", "KafkaException", "Message",
           "PartitionMetadata", "Producer", "TopicMetadata", "OFFSET_INVALID",
           "TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "TIMESTAMP_NOT_AVAILABLE"]


def __getattr__(name: str) -> Any:
    # AIOProducer lives in .aio (it needs asyncio); importable from here too, lazily.
    if name == "AIOProducer":
        from kafkacore.compat.confluent.aio import AIOProducer

        return AIOProducer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
