"""How a user's code meets kafkacore's types: checked by ``mypy --strict`` (and pyright) in the
lint env, never imported by the tests.  Every ``assert_type`` is a claim about the public API;
a change that loses a type (an ``Any`` where there was a class) fails the lint run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import assert_type

from kafkacore import KafkaProducer, RecordMetadata
from kafkacore.aio import AIOKafkaProducer
from kafkacore.core import BatchFuture, BatchResult, FutureRecordMetadata
from kafkacore.delivery import DeliveredMessage
from kafkacore.errors import KafkaError, KafkaTimeoutError
from kafkacore.testing import LocalBroker


def on_send(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
    if metadata is not None:
        assert_type(metadata.offset, int)


def on_send_narrow(metadata: RecordMetadata | None, exception: Exception | None) -> None:
    """Annotated with Exception, as most code is: records fail with an Exception."""
    print(metadata, exception)


def on_delivery(err: BaseException | None, msg: DeliveredMessage) -> None:
    print(err, msg.topic(), msg.partition(), msg.offset())


def on_delivery_narrow(err: Exception | None, msg: DeliveredMessage) -> None:
    print(err, msg.offset())


def sync_producer(bootstrap: str) -> None:
    producer = KafkaProducer({"bootstrap.servers": bootstrap}, linger_ms=5)
    assert_type(producer, KafkaProducer)
    future = producer.send("t", b"v", key=b"k", headers=[("h", b"1")], callback=on_send)
    assert_type(future, FutureRecordMetadata)
    producer.send("t", b"v", on_delivery=on_delivery, timestamp_ms=1)
    producer.send("t", b"v", callback=on_send_narrow, headers={"h": "text", "g": b"b", "n": None})
    producer.send("t", b"v", on_delivery=on_delivery_narrow, headers=[("h", "text")])
    metadata = future.get(timeout=10)
    assert_type(metadata, RecordMetadata)
    assert_type(future.result(), RecordMetadata)
    assert_type(future.exception(0), BaseException | None)
    future.add_callback(print).add_errback(print)

    # The standard library's functions take the futures as they are.
    done, _pending = concurrent.futures.wait([future], timeout=10)
    for finished in concurrent.futures.as_completed(done):
        print(finished.result().offset)

    batch = producer.send_batch("t", [b"a", b"b"], keys=[None, b"k"])
    assert_type(batch, BatchFuture)
    result = batch.result(10)
    assert_type(result, BatchResult)
    assert_type(result.errors, list[BaseException | None])
    producer.flush(5)
    assert_type(producer.partitions_for("t"), list[int])
    assert_type(producer.metrics(), dict[str, float])
    producer.close()

    with KafkaProducer(bootstrap_servers=bootstrap) as same:
        assert_type(same, KafkaProducer)


async def asyncio_producer(bootstrap: str) -> None:
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        assert_type(producer, AIOKafkaProducer)
        future = await producer.send("t", b"v")
        assert_type(future, FutureRecordMetadata)
        assert_type(await future, RecordMetadata)
        assert_type(await asyncio.wrap_future(future), RecordMetadata)
        assert_type(await producer.send_and_wait("t", b"v"), RecordMetadata)
        batch = await producer.send_batch("t", [b"a"])
        assert_type(await batch, BatchResult)
        await producer.flush()


def errors() -> None:
    try:
        sync_producer("127.0.0.1:9092")
    except KafkaTimeoutError as exc:
        assert_type(exc, KafkaTimeoutError)
    except KafkaError as exc:
        print(exc)


def local_broker() -> None:
    with LocalBroker() as broker:
        assert_type(broker.bootstrap, str)
        asyncio.run(asyncio_producer(broker.bootstrap))
