"""Batching: how linger.ms and batch.size shape what goes over the wire.

We send the same records twice — once with batches of 16 KiB, once with 256 KiB — and ask the
producer's metrics how big the batches it sent were.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/21_batching_and_linger.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""
# needs: broker

from kafkacore import KafkaProducer, admin
from kafkacore.testing import given_or_local_broker


def average_batch(bootstrap: str, batch_size: int) -> float:
    # --- start
    with KafkaProducer(
        bootstrap_servers=bootstrap, batch_size=batch_size, linger_ms=200, compression_type="none"
    ) as producer:
        for i in range(20_000):
            producer.send("batching-tour", b"%05d" % i + b"." * 95, partition=0)
        producer.flush()
        metrics = producer.metrics()
    print(f"batch.size={batch_size:>7}: {metrics['batch-size-avg']:9.0f} bytes per batch on "
          f"average, {metrics['records-per-request-avg']:7.1f} records per request")
    return metrics["batch-size-avg"]
    # --- end


def main(bootstrap: str) -> None:
    admin.create_topics(bootstrap, {"batching-tour": 1})
    small = average_batch(bootstrap, 16 * 1024)
    large = average_batch(bootstrap, 256 * 1024)
    # A batch never holds more than batch.size bytes (one record can make a batch bigger) ...
    assert small <= 16 * 1024
    # ... and with records arriving much faster than linger.ms, batches fill up: bigger ones for a
    # bigger batch.size.
    assert large > small
    print("bigger batch.size, bigger batches: fewer requests for the same records")


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        main(bootstrap)
