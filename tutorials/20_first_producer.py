"""Our first producer: send a few records to a local broker and watch them come back.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/20_first_producer.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""
# needs: broker

from kafkacore import KafkaProducer, RecordMetadata, admin
from kafkacore.testing import given_or_local_broker


def main(bootstrap: str) -> None:
    # --- start
    admin.create_topics(bootstrap, {"first-steps": 3})
    acked = []

    def on_delivery(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
        # Runs once per record, on the producer's I/O thread, in send order per partition.
        assert exception is None, exception
        acked.append(metadata)

    with KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        futures = [
            producer.send("first-steps", b"hello %d" % i, key=b"user-%d" % (i % 3), callback=on_delivery)
            for i in range(9)
        ]
        producer.flush()
        for future in futures:
            meta = future.get(timeout=10)
            print(f"{meta.topic}-{meta.partition} @ offset {meta.offset}")

    # Records with the same key went to the same partition, in the order we sent them.
    by_key: dict[int, set[int]] = {}
    for i, future in enumerate(futures):
        by_key.setdefault(i % 3, set()).add(future.result().partition)
    assert all(len(parts) == 1 for parts in by_key.values())
    assert len(acked) == 9
    print("9 records acknowledged, each exactly once")


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        main(bootstrap)
