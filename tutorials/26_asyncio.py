"""The producer in asyncio code: aiokafka's names, and a loop that never waits on Kafka.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/26_asyncio.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""
# needs: broker

from __future__ import annotations

import asyncio

from kafkacore import admin
from kafkacore.aio import AIOKafkaProducer
from kafkacore.testing import given_or_local_broker


async def heartbeat(beats: list[int]) -> None:
    # Another task on the same loop: it only makes progress while nobody blocks the loop.
    while True:
        beats.append(len(beats))
        await asyncio.sleep(0.001)


async def main(bootstrap: str) -> None:
    # --- start
    admin.create_topics(bootstrap, {"asyncio-steps": 3})
    beats: list[int] = []
    ticker = asyncio.ensure_future(heartbeat(beats))
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        # send() returns once the record is queued; what it returns is awaited for the answer.
        futures = [
            await producer.send("asyncio-steps", b"hello %d" % i, key=b"user-%d" % (i % 3))
            for i in range(9)
        ]
        for future in futures:
            metadata = await future
            print(f"{metadata.topic}-{metadata.partition} @ offset {metadata.offset}")
        # One call for both steps, as aiokafka spells it.
        last = await producer.send_and_wait("asyncio-steps", b"bye", key=b"user-0")
        print(f"send_and_wait: offset {last.offset} of partition {last.partition}")
        # A topic nobody asked for yet: send() waits for its metadata in a worker thread, and the
        # heartbeat task keeps beating meanwhile.
        before = len(beats)
        await producer.send_and_wait("asyncio-steps-new", b"first")
        print(f"while the new topic's metadata came, the heartbeat went on: {len(beats) > before}")
    ticker.cancel()
    # --- end
    assert {f.result().partition for f in futures[::3]} == {last.partition}


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        asyncio.run(main(bootstrap))
