"""Idempotence, as the broker sees it: one producer id, and sequence numbers with no gaps.

We send records with small batches, then read the partition's batches back exactly as the broker
stores them and print each header's producer id, epoch and base sequence.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/22_idempotent_sequences.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""
# needs: broker

from kafkacore import KafkaProducer, admin
from kafkacore.core import iter_batches
from kafkacore.testing import fetch_record_batches, given_or_local_broker


def main(bootstrap: str) -> None:
    # --- start
    admin.create_topics(bootstrap, {"idempotence-tour": 1})
    # Idempotence is on by default; small batches give us several to look at.
    with KafkaProducer(bootstrap_servers=bootstrap, batch_size=1024, linger_ms=1) as producer:
        for i in range(100):
            producer.send("idempotence-tour", b"record %03d" % i)
        producer.flush()

    expected_sequence = 0
    ids = set()
    for raw in fetch_record_batches(bootstrap, "idempotence-tour", 0):
        [batch] = iter_batches(raw)
        print(f"offsets {batch.base_offset:3}-{batch.base_offset + batch.record_count - 1:3}  "
              f"producer id {batch.producer_id}, epoch {batch.producer_epoch}, "
              f"base sequence {batch.base_sequence}")
        # Each batch starts where the one before ended: the broker could spot a gap or a repeat.
        assert batch.base_sequence == expected_sequence
        expected_sequence += batch.record_count
        ids.add((batch.producer_id, batch.producer_epoch))
    assert expected_sequence == 100 and len(ids) == 1
    print(f"100 records in sequence, all from producer id {ids.pop()[0]}")


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        main(bootstrap)
