"""kafkacore.aio.AIOKafkaProducer against a real broker, read back by confluent-kafka.

The claim to test is that the event loop keeps running while a send waits for metadata or for
memory: another task counts its turns while the send is pending, and the test checks both states
(the send still pending, the other task's count grown), never the clock.
"""

from __future__ import annotations

import asyncio

import pytest
from readback import read_confluent

from kafkacore.aio import AIOKafkaProducer
from kafkacore.core import FutureRecordMetadata, RecordMetadata
from kafkacore.errors import IllegalStateError, KafkaTimeoutError


async def _turns_while_pending(task: asyncio.Task, turns: int) -> int:
    """Let the loop go round ``turns`` times (1 ms sleeps) while ``task`` stays pending;
    return how many turns it went before ``task`` finished (== turns if it did not)."""
    for done in range(turns):
        if task.done():
            return done
        await asyncio.sleep(0.001)
    return turns


def test_send_send_and_wait_send_batch_flush(bootstrap, make_topic):
    topic = make_topic(partitions=1)

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
            futures = [await producer.send(topic, b"v%d" % i, key=b"k") for i in range(100)]
            assert all(isinstance(f, FutureRecordMetadata) for f in futures)
            metadata = await producer.send_and_wait(topic, b"waited", timestamp_ms=1234)
            batch = await (await producer.send_batch(topic, [b"c0", b"c1", b"c2"]))
            await producer.flush()
            assert all(f.done() for f in futures)
            first = await futures[0]
            partitions = await producer.partitions_for(topic)
        return first, metadata, batch, partitions

    first, metadata, batch, partitions = asyncio.run(main())
    assert isinstance(first, RecordMetadata) and first.offset == 0
    assert metadata.offset == 100 and metadata.timestamp == 1234
    assert list(batch.offsets) == [101, 102, 103] and batch.failed == 0
    assert partitions == [0]
    consumed = sorted(read_confluent(bootstrap, topic, 1, 104), key=lambda c: c.offset)
    assert [c.value for c in consumed] == (
        [b"v%d" % i for i in range(100)] + [b"waited", b"c0", b"c1", b"c2"])
    assert consumed[100].timestamp == 1234 and consumed[0].key == b"k"


def test_serializers_and_max_batch_size(bootstrap, make_topic):
    topic = make_topic(partitions=1)

    async def main():
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap, max_batch_size=4096,
            value_serializer=lambda v: v.encode(), key_serializer=str.encode,
        ) as producer:
            assert producer.config["batch.size"] == 4096
            return await producer.send_and_wait(topic, "text", key="key")

    assert asyncio.run(main()).serialized_value_size == 4
    (record,) = read_confluent(bootstrap, topic, 1, 1)
    assert (record.key, record.value) == (b"key", b"text")


def test_the_loop_runs_while_send_waits_for_memory(bootstrap, make_topic):
    topic = make_topic(partitions=1)

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, buffer_memory=64 * 1024,
                                    batch_size=16 * 1024) as producer:
            await producer.partitions_for(topic)  # metadata known: only memory is missing
            # white-box: the pool's memory taken directly, so the send surely waits for memory
            pool = producer._producer._pool
            taken = pool.allocate(pool.available_memory(), 1000)
            assert pool.available_memory() == 0
            sending = asyncio.ensure_future(producer.send(topic, b"after the wait"))
            turns = await _turns_while_pending(sending, 50)
            # The loop went round 50 times while the send waited for memory in a worker.
            assert turns == 50 and not sending.done()
            pool.deallocate(taken)
            future = await asyncio.wait_for(sending, 60)
            second = await producer.send(topic, b"next")
            return await future, await second

    first, second = asyncio.run(main())
    assert (first.offset, second.offset) == (0, 1)
    consumed = sorted(read_confluent(bootstrap, topic, 1, 2), key=lambda c: c.offset)
    assert [c.value for c in consumed] == [b"after the wait", b"next"]


def test_the_loop_runs_while_send_waits_for_metadata(closed_port):
    port = closed_port  # nobody listens there: metadata never comes

    async def main():
        producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", max_block_ms=60_000)
        await producer.start()
        sending = asyncio.ensure_future(producer.send("nowhere", b"v"))
        turns = await _turns_while_pending(sending, 50)
        assert turns == 50 and not sending.done()
        # stop() ends the wait (the metadata closes) instead of leaving it to max.block.ms.
        await asyncio.wait_for(producer.stop(), 60)
        with pytest.raises(IllegalStateError, match="metadata closed"):
            await asyncio.wait_for(sending, 60)

    asyncio.run(main())


def test_send_times_out_after_max_block_ms_without_a_broker(closed_port):
    port = closed_port

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}",
                                    max_block_ms=500) as producer:
            with pytest.raises(KafkaTimeoutError, match=f"Brokers tried: 127.0.0.1:{port}"):
                await asyncio.wait_for(producer.send("nowhere", b"v"), 60)

    asyncio.run(main())


def test_use_before_start_and_twice_started(bootstrap):
    async def main():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        with pytest.raises(IllegalStateError, match="start"):
            await producer.send("t", b"v")
        await producer.start()
        try:
            with pytest.raises(IllegalStateError, match="already"):
                await producer.start()
        finally:
            await producer.stop()
        await producer.stop()  # twice is harmless
        with pytest.raises(IllegalStateError, match="stopped"):
            await producer.send("t", b"v")

    asyncio.run(main())


def test_headers_from_a_generator_survive_the_wait_for_metadata(bootstrap, make_topic):
    # The topic is new to this producer: the first append would wait, so the send moves to a
    # worker; the headers, a one-shot generator, must arrive whole all the same.
    topic = make_topic(partitions=1)

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            headers = ((name, b"v-" + name.encode()) for name in ("a", "b"))
            return await producer.send_and_wait(topic, b"value", headers=headers)

    assert asyncio.run(main()).offset == 0
    (record,) = read_confluent(bootstrap, topic, 1, 1)
    assert record.headers == (("a", b"v-a"), ("b", b"v-b"))


def test_a_queued_send_is_awaited_or_run_as_a_task_like_a_coroutine(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    calls = []

    class Counting(AIOKafkaProducer):
        async def send(self, *args, **kwargs):
            calls.append(args[0])
            return await super().send(*args, **kwargs)

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            await producer.send_and_wait(topic, b"metadata known: no record waits below")
            queued = producer.send(topic, b"awaited")
            assert asyncio.iscoroutine(queued)  # what create_task and aiokafka's users expect
            awaited = await queued
            as_task = await asyncio.create_task(producer.send(topic, b"task"))
            ensured = await asyncio.ensure_future(producer.send(topic, b"ensured"))
            gathered = await asyncio.gather(producer.send(topic, b"g0"), producer.send(topic, b"g1"))
            with pytest.raises(KeyError):
                producer.send(topic, b"thrown").throw(KeyError("thrown in"))
            # Bad arguments raise at the call, with the errors of KafkaProducer.send.
            with pytest.raises(TypeError):
                producer.send(topic, b"v", partition=0, bogus=1)
            with pytest.raises(ValueError):
                producer.send(topic, b"v", partition=-1)
            offsets = [(await f).offset for f in (awaited, as_task, ensured, *gathered)]
        async with Counting(bootstrap_servers=bootstrap) as counting:
            await (await counting.send(topic, b"counted"))
        return offsets

    assert asyncio.run(main()) == [1, 2, 3, 4, 5]
    assert calls == [topic]
    consumed = sorted(read_confluent(bootstrap, topic, 1, 8), key=lambda c: c.offset)
    assert [c.value for c in consumed][1:] == [
        b"awaited", b"task", b"ensured", b"g0", b"g1", b"thrown", b"counted"]
