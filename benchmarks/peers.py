"""The peer producers the benchmarks measure kafkacore against, written once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def produce_confluent(bootstrap: str, topic: str, n: int, value: bytes,
                      config: dict[str, Any],
                      on_flushed: Callable[[Any], None] | None = None) -> int:
    """Send ``n`` records with confluent-kafka's Producer as fast as its queue takes them
    (polling when it is full), flush, and return how many were acknowledged.  ``on_flushed``
    is given the producer once it is flushed (to read its statistics)."""
    from confluent_kafka import Producer

    acked = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "queue.buffering.max.messages": 1_000_000,
                         **config})
    produce, poll = producer.produce, producer.poll
    for i in range(n):
        while True:
            try:
                produce(topic, value, callback=on_delivery)
                break
            except BufferError:
                poll(0.001)
        if i & 0xFFF == 0:
            poll(0)
    producer.flush(120)
    if on_flushed is not None:
        on_flushed(producer)
    return acked[0]
