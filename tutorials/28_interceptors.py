"""Interceptors: see (and change) every record on its way in, and every answer on its way back.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/28_interceptors.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""
# needs: broker

from typing import Any

from kafkacore import KafkaProducer, RecordMetadata, admin
from kafkacore.testing import given_or_local_broker


# --- start
class Stamp:
    """Keys the records that have no key: on_send returns the record's fields, changed."""

    def on_send(self, topic: str, value: Any, key: Any, partition: int | None,
                timestamp: int | None, headers: Any) -> tuple[Any, ...] | None:
        if key is None:
            key = b"traced"
        return topic, value, key, partition, timestamp, headers

    def on_acknowledgement(self, metadata: RecordMetadata | None,
                          exception: BaseException | None) -> None:
        pass


class Count:
    """Counts what was sent and what came back; returning None leaves the record as it is."""

    def __init__(self) -> None:
        self.sent = self.acked = self.failed = 0

    def on_send(self, topic: str, value: Any, key: Any, partition: int | None,
                timestamp: int | None, headers: Any) -> tuple[Any, ...] | None:
        self.sent += 1
        return None

    def on_acknowledgement(self, metadata: RecordMetadata | None,
                          exception: BaseException | None) -> None:
        if exception is None:
            self.acked += 1
        else:
            self.failed += 1


class Broken:
    """An interceptor that raises: logged, and the record goes on unchanged."""

    def on_send(self, topic: str, value: Any, key: Any, partition: int | None,
                timestamp: int | None, headers: Any) -> tuple[Any, ...] | None:
        raise RuntimeError("a bug in somebody's interceptor")

    def on_acknowledgement(self, metadata: RecordMetadata | None,
                          exception: BaseException | None) -> None:
        raise RuntimeError("another one")
# --- end


def main(bootstrap: str) -> None:
    admin.create_topics(bootstrap, {"intercepted": 1})
    count = Count()
    called_back: list[BaseException | None] = []
    config = {"bootstrap.servers": bootstrap, "interceptor.classes": [Stamp(), Broken(), count]}
    with KafkaProducer(config) as producer:
        futures = [producer.send("intercepted", b"record %d" % i,
                                 callback=lambda m, e: called_back.append(e)) for i in range(5)]
        producer.flush()
        answers = [f.get(timeout=10) for f in futures]
    print(f"offsets {[a.offset for a in answers]}, key sizes {[a.serialized_key_size for a in answers]}")
    print(f"sent {count.sent}, acknowledged {count.acked}, failed {count.failed}")
    # Stamp's change reached the broker: every record went with its 6-byte key.
    assert [a.serialized_key_size for a in answers] == [6] * 5
    # Each interceptor saw each record once; the broken one cost nothing but a log line; the
    # callbacks given to send still ran, once each, after the interceptors.
    assert (count.sent, count.acked, count.failed) == (5, 5, 0)
    assert called_back == [None] * 5
    print("every record seen once on the way in and once on the way back")


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        main(bootstrap)
