"""confluent-kafka's ``AIOProducer`` (``confluent_kafka.aio``), on kafkacore.

>>> from kafkacore.compat.confluent.aio import AIOProducer     # doctest: +SKIP
>>> producer = AIOProducer({"bootstrap.servers": "localhost:9092"})   # in a coroutine
>>> delivered = await producer.produce("orders", value=b"v")  # queued: a Future
>>> msg = await delivered                                     # acknowledged: a Message

The calls are confluent's and every one is a coroutine: ``produce`` (returns an
``asyncio.Future`` that resolves to the delivered :class:`~kafkacore.compat.confluent.Message`
or raises :class:`~kafkacore.compat.confluent.KafkaException`), ``poll``, ``flush``,
``list_topics``, the transactional calls (``begin_transaction``, ``commit_transaction`` and
``abort_transaction`` flush first, as confluent's do) and ``close``.  Calls that may wait run on
a thread pool (``max_workers``, or your ``executor``), never on the event loop.

``error_cb``, ``throttle_cb`` and ``stats_cb`` may be coroutine functions or plain functions;
either way they run on the event loop, as confluent schedules them.  Delivery futures are
resolved on the loop as soon as the broker answers: nothing needs ``poll()``.  ``batch_size``
and ``buffer_timeout`` (confluent's client-side batching before librdkafka) are accepted:
kafkacore's accumulator batches records itself (``linger.ms``, ``batch.size``).  Unlike
confluent's, ``produce`` takes ``headers``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from collections.abc import Callable
from typing import Any

from kafkacore.compat.confluent import KafkaError, KafkaException, Message, Producer

__all__ = ["AIOProducer"]


class _LoopProducer(Producer):
    """The facade with its callbacks run where they happen (AIOProducer sends them on)."""

    _serve_directly = True


class AIOProducer:
    """confluent-kafka's asyncio producer (see the module's doc).  Create it in a coroutine:
    it belongs to the running event loop."""

    def __init__(self, producer_conf: dict[str, Any], max_workers: int = 4,
                 executor: concurrent.futures.Executor | None = None, batch_size: int = 1000,
                 buffer_timeout: float = 1.0) -> None:
        self._loop = asyncio.get_running_loop()
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="kafkacore-aio")
        conf = dict(producer_conf)
        for name in ("error_cb", "throttle_cb", "stats_cb"):
            if conf.get(name) is not None:
                conf[name] = self._on_loop(conf[name])
        self._producer = _LoopProducer(conf)
        self._is_closed = False

    def _on_loop(self, callback: Callable[..., Any]) -> Callable[..., None]:
        """``callback`` run on the event loop (a coroutine becomes a task), from any thread."""
        loop = self._loop

        def run(*args: Any) -> None:
            result = callback(*args)
            if inspect.isawaitable(result):
                loop.create_task(_logged(result))

        def schedule(*args: Any) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(run, *args)

        return schedule

    async def _call(self, blocking: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._loop.run_in_executor(
            self.executor, functools.partial(blocking, *args, **kwargs))

    # -- producing ---------------------------------------------------------------------------

    async def produce(self, topic: str, value: Any = None, key: Any = None, *args: Any,
                      **kwargs: Any) -> asyncio.Future[Message]:
        """Queue one message; returns a Future resolved with its Message once delivered (or
        failed with KafkaException).  ``partition``, ``timestamp`` and ``headers`` as
        :meth:`Producer.produce <kafkacore.compat.confluent.Producer.produce>`."""
        if self._is_closed:
            raise KafkaException(KafkaError(KafkaError._STATE, "the producer is closed"))
        result: asyncio.Future[Message] = self._loop.create_future()
        loop = self._loop

        def settle(err: KafkaError | None, msg: Message) -> None:
            if result.done():
                return
            if err is None:
                result.set_result(msg)
            else:
                result.set_exception(KafkaException(err))

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, err, msg)

        for name in ("callback", "on_delivery"):  # confluent's batch mode has none: refuse
            if name in kwargs:
                raise TypeError(f"AIOProducer.produce takes no {name}: await the Future")
        await self._call(self._producer.produce, topic, value, key, *args,
                         on_delivery=delivered, **kwargs)
        return result

    async def poll(self, timeout: float = 0, *args: Any, **kwargs: Any) -> int:
        return int(await self._call(self._producer.poll, timeout, *args, **kwargs))

    async def flush(self, *args: Any, **kwargs: Any) -> int:
        return int(await self._call(self._producer.flush, *args, **kwargs))

    async def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._producer.list_topics, *args, **kwargs)

    def __len__(self) -> int:
        return 0 if self._is_closed else len(self._producer)

    # -- transactions ------------------------------------------------------------------------

    async def init_transactions(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.init_transactions, *args, **kwargs)

    async def begin_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self.flush()
        await self._call(self._producer.begin_transaction, *args, **kwargs)

    async def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.send_offsets_to_transaction, *args, **kwargs)

    async def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self.flush()
        await self._call(self._producer.commit_transaction, *args, **kwargs)

    async def abort_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self.flush()
        await self._call(self._producer.abort_transaction, *args, **kwargs)

    # -- the end -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Deliver what is queued, stop the producer and the thread pool."""
        if self._is_closed:
            return
        self._is_closed = True
        try:
            await self._call(self._producer.close)
        finally:
            await self._loop.run_in_executor(None, self.executor.shutdown, True)

    async def __aenter__(self) -> AIOProducer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _logged(awaitable: Any) -> None:
    """A callback's coroutine, its failure logged (a task nobody awaits would hide it)."""
    try:
        await awaitable
    except Exception:
        import logging

        logging.getLogger("kafkacore.compat").exception("a callback coroutine failed")
