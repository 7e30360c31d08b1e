"""AIOKafkaProducer: the producer for asyncio code, with aiokafka's names.

It is a :class:`~kafkacore.producer.KafkaProducer` inside (the same compiled core, accumulator and
Sender thread); what changes is who waits.  ``send()`` first appends without waiting at all: with
the topic's metadata known and a batch with room (or memory for a new one), the record is in the
accumulator before ``send`` returns, and the event loop never left its thread.  Only when the append
*would* block (Java's ``waitOnMetadata``, or ``BufferPool.allocate`` finding no memory) does the
call move to a worker thread, where the ordinary bounded wait (``max.block.ms``) happens while the
coroutine awaits it and the loop runs other tasks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from types import TracebackType
from typing import Any

from kafkacore.config import ProducerConfig
from kafkacore.core.appender import AsyncSend
from kafkacore.core.batch import BatchFuture, BatchResult, FutureRecordMetadata, RecordMetadata
from kafkacore.core.record_sizes import normalize_headers
from kafkacore.errors import BufferExhaustedError, IllegalStateError
from kafkacore.producer import Headers, KafkaProducer

__all__ = ["AIOKafkaProducer"]

# aiokafka's setting names that are not simply ours with underscores.
_AIOKAFKA_NAMES = {"max_batch_size": "batch_size"}


class _WouldBlock(Exception):
    """Raised inside the non-blocking append when the topic's metadata is not known yet."""


class AIOKafkaProducer:
    """Send records from asyncio code without blocking the event loop.

    ``AIOKafkaProducer(bootstrap_servers="host:9092", linger_ms=5)`` takes every setting
    :class:`~kafkacore.producer.KafkaProducer` takes (aiokafka's ``max_batch_size`` too, as
    ``batch.size``)::

        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            future = await producer.send("events", b"hello")   # queued
            metadata = await future                              # acknowledged

    ``send`` returns once the record is queued; the awaitable it returns (the record's
    :class:`~kafkacore.core.FutureRecordMetadata`) resolves when the broker acknowledges it.
    """

    def __init__(self, config: dict[str, Any] | None = None, **settings: Any) -> None:
        for theirs, ours in _AIOKAFKA_NAMES.items():
            if theirs in settings:
                settings[ours] = settings.pop(theirs)
        self._config = config
        self._settings = settings
        self._producer: KafkaProducer | None = None
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self._stopped = False

    # -- start and stop ---------------------------------------------------------------------

    async def start(self) -> None:
        """Build the producer and start its Sender thread (settings are checked here)."""
        if self._producer is not None:
            raise IllegalStateError("the producer was started already")
        producer = KafkaProducer(self._config, **self._settings)
        self._producer = producer
        # The waits that may take up to max.block.ms run here, never on the loop's thread.
        self._workers = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix=f"kafkacore-aio | {producer.client_id}")
        # Serializers run once, in send(); both appenders take bytes.
        self._now = producer._new_appender(self._metadata_now, 0, None, None)
        self._waiting = producer._new_appender(
            producer._wait_on_metadata, producer.config["max.block.ms"], None, None)
        # With no serializer, interceptor or transaction, send() has nothing to do in Python
        # before the append: it is then compiled (AsyncSend), unless a subclass overrides it.
        plain = not (producer._transactional or producer._interceptors
                     or producer._key_serializer or producer._value_serializer)
        if plain and type(self).send is _PYTHON_SEND:
            self.send = AsyncSend(  # type: ignore[method-assign,assignment]
                self._now, self._append_waiting, (_WouldBlock, BufferExhaustedError)).send

    async def stop(self) -> None:
        """Deliver what is queued (bounded by ``delivery.timeout.ms``), then stop the Sender."""
        producer, workers = self._producer, self._workers
        if producer is None or workers is None or self._stopped:
            return
        self._stopped = True
        self.__dict__.pop("send", None)  # the Python send, which refuses: stopped
        self._now.closed = self._waiting.closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(workers, producer.close)
        finally:
            workers.shutdown(wait=False)

    async def __aenter__(self) -> AIOKafkaProducer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- sending ----------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record; return the awaitable of its :class:`~kafkacore.core.RecordMetadata`.

        Arguments, checks and errors are those of
        :meth:`KafkaProducer.send <kafkacore.producer.KafkaProducer.send>`.  The record is queued
        when this coroutine returns; if it had to wait for metadata or memory, it waited in a
        worker thread while the event loop went on.  Sends awaited one after another keep their
        order; a send that is cancelled while it waits may still queue its record.

        With no serializer, interceptor or transaction, ``send`` is compiled: a record that
        need not wait is queued during the call itself, and what it returns (a
        :class:`~kafkacore.core.appender.QueuedRecord`, which ``create_task`` takes like a
        coroutine) gives its future as soon as it is awaited.
        """
        producer = self._started()
        txn = producer._transactional
        if txn is not None and not txn.sending_allowed:
            txn.fail_if_not_ready_for_send()
        if producer._interceptors:
            topic, value, key, partition, timestamp_ms, headers = producer._on_send(
                topic, value, key, partition, timestamp_ms, headers)
            callback = producer._with_acknowledgement(None)
        else:
            callback = None
        if producer._key_serializer is not None:
            key = producer._key_serializer(topic, key)
        if producer._value_serializer is not None:
            value = producer._value_serializer(topic, value)
        if headers is not None:
            # Once, here: a one-shot iterable must reach the second append intact.
            headers = normalize_headers(headers)
        try:
            return self._now.append(topic, value, key, partition, timestamp_ms, headers, callback)
        except (_WouldBlock, BufferExhaustedError):
            return await self._append_waiting(
                topic, value, key, partition, timestamp_ms, headers, callback)

    async def _append_waiting(self, *record: Any) -> FutureRecordMetadata:
        """The append that may wait (metadata, memory): in a worker thread, never on the loop."""
        loop = asyncio.get_running_loop()
        future: FutureRecordMetadata = await loop.run_in_executor(
            self._workers, self._waiting.append, *record)
        return future

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> RecordMetadata:
        """Send one record and wait until the broker acknowledged it."""
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    async def send_batch(
        self,
        topic: str,
        values: Any,
        keys: Any = None,
        partitions: Any = None,
        timestamps: Any = None,
        headers: Any = None,
    ) -> asyncio.Future[BatchResult]:
        """Queue whole columns (see :meth:`KafkaProducer.send_batch <kafkacore.producer.KafkaProducer.send_batch>`); return the awaitable of
        their :class:`~kafkacore.core.BatchResult`.

        Unlike aiokafka's ``send_batch`` (a batch you build record by record for one partition),
        this one takes columns and spreads them over partitions as ``send`` would.  The columns
        are appended in a worker thread: a call carries many records, so one thread hop is
        cheap, and waits for metadata or memory never reach the loop.
        """
        producer = self._started()
        loop = asyncio.get_running_loop()
        batch_future: BatchFuture = await loop.run_in_executor(
            self._workers, producer.send_batch, topic, values, keys, partitions, timestamps,
            headers)
        done: asyncio.Future[BatchResult] = loop.create_future()

        def settle(finished: BatchFuture) -> None:
            # On the loop's thread, after the I/O thread finished the batch.
            if done.cancelled():
                return
            error = finished.exception(0)
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(finished.result(0))

        batch_future.add_done_callback(lambda f: loop.call_soon_threadsafe(settle, f))
        return done

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every record queued so far is acknowledged or failed."""
        producer = self._started()
        await asyncio.get_running_loop().run_in_executor(self._workers, producer.flush, timeout)

    # -- transactions -----------------------------------------------------------------------
    # Those of KafkaProducer, each awaited in a worker thread (aiokafka's names where it has
    # them: ``transaction()`` is aiokafka's ``async with`` block).

    async def init_transactions(self, timeout: float | None = None) -> None:
        """See :meth:`KafkaProducer.init_transactions <kafkacore.producer.KafkaProducer.init_transactions>`."""
        await self._in_worker(self._started().init_transactions, timeout)

    async def begin_transaction(self) -> None:
        """See :meth:`KafkaProducer.begin_transaction <kafkacore.producer.KafkaProducer.begin_transaction>`."""
        self._started().begin_transaction()

    async def send_offsets_to_transaction(
        self, offsets: Any, group_metadata: Any, timeout: float | None = None
    ) -> None:
        """See :meth:`KafkaProducer.send_offsets_to_transaction <kafkacore.producer.KafkaProducer.send_offsets_to_transaction>`."""
        await self._in_worker(
            self._started().send_offsets_to_transaction, offsets, group_metadata, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """See :meth:`KafkaProducer.commit_transaction <kafkacore.producer.KafkaProducer.commit_transaction>`."""
        await self._in_worker(self._started().commit_transaction, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """See :meth:`KafkaProducer.abort_transaction <kafkacore.producer.KafkaProducer.abort_transaction>`."""
        await self._in_worker(self._started().abort_transaction, timeout)

    def transaction(self) -> _Transaction:
        """``async with producer.transaction():`` begins a transaction, commits it when the
        block ends, or aborts it if the block raises (aiokafka's ``transaction()``)."""
        return _Transaction(self)

    async def _in_worker(self, call: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._workers, call, *args)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition numbers of ``topic``, waiting for metadata up to ``max.block.ms``."""
        producer = self._started()
        return await asyncio.get_running_loop().run_in_executor(
            self._workers, producer.partitions_for, topic)

    @property
    def config(self) -> ProducerConfig:
        """The settings the producer runs with, by Kafka's names (aiokafka's
        ``max_batch_size`` reads as ``batch.size``), as :attr:`KafkaProducer.config
        <kafkacore.producer.KafkaProducer.config>` has them; known once started."""
        return self._started().config

    def metrics(self) -> dict[str, float]:
        """The producer's metrics (see :meth:`KafkaProducer.metrics <kafkacore.producer.KafkaProducer.metrics>`)."""
        return self._started().metrics()

    # -- helpers ----------------------------------------------------------------------------

    def _started(self) -> KafkaProducer:
        producer = self._producer
        if producer is None:
            raise IllegalStateError("call start() (or use 'async with') before sending")
        if self._stopped:
            raise IllegalStateError("the producer is stopped")
        return producer

    def _metadata_now(self, topic: str, partition: int | None) -> Any:
        """The non-blocking appender's ``wait_on_metadata``: never waits."""
        producer = self._started()
        cluster = producer._metadata.cluster
        count = cluster.partition_count(topic)
        if count and (partition is None or partition < count):
            return cluster
        # Ask the Sender for it now; the worker thread's wait then finds it sooner.
        producer._metadata.add_topic(topic)
        producer._sender.wakeup()
        raise _WouldBlock(topic)



# The Python send(), to tell whether a subclass overrides it (start).
_PYTHON_SEND = AIOKafkaProducer.send


class _Transaction:
    """The ``async with`` block of :meth:`AIOKafkaProducer.transaction`."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> AIOKafkaProducer:
        await self._producer.begin_transaction()
        return self._producer

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self._producer.commit_transaction()
        else:
            await self._producer.abort_transaction()
