"""Tutorial 52: a transaction committed and one aborted, seen at both isolation levels.

A transactional producer (confluent-kafka's, with ``transactional.id``) asks our broker's
transaction coordinator for a producer id and epoch (InitProducerId), adds each partition before
its first record goes there (AddPartitionsToTxn), and ends with EndTxn: the coordinator writes
PrepareCommit or PrepareAbort to ``__transaction_state``, then a COMMIT or ABORT marker into every
partition of the transaction, then CompleteCommit or CompleteAbort.

A read_uncommitted consumer sees every record in the log.  A read_committed one reads only below
the last stable offset (LSO), and drops the records of the aborted transactions that the broker
lists with each fetch.  While a transaction is open, the LSO waits at its first record.

    python tutorials/52_transactions.py
"""

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkacore.broker import Broker

TOPIC = "payments"

settings = {"num.partitions": "1"}


def read_all(bootstrap: str, isolation: str) -> list[str]:
    """Every record a consumer at ``isolation`` returns, from offset 0 until it has waited
    a second for more."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tutorial",
                  "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 1.0:
        m = c.poll(0.2)
        value = None if m is None or m.error() else m.value()
        if value is not None:
            out.append(value.decode())
            quiet_since = time.monotonic()
    c.close()
    return out


def wait_for(condition: Callable[[], bool], what: str, bound_s: float = 10.0) -> None:
    """EndTxn is answered once PrepareCommit/PrepareAbort is written; the markers follow."""
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {bound_s} s"
        time.sleep(0.05)


def offsets(broker: Broker) -> str:
    lg = broker.log_manager.get_log(TOPIC, 0)
    return f"high watermark {lg.high_watermark}, last stable offset {lg.last_stable_offset}"


with Broker(settings) as broker:
    bootstrap = broker.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "payments-app"})
    producer.init_transactions(30)  # FindCoordinator(TRANSACTION) + InitProducerId

    producer.begin_transaction()
    for i in range(3):
        producer.produce(TOPIC, b"paid-%d" % i)
    producer.commit_transaction(30)  # offsets 0-2, COMMIT marker at 3

    producer.begin_transaction()
    for i in range(2):
        producer.produce(TOPIC, b"refused-%d" % i)
    producer.flush(30)  # in the log now (librdkafka drops unsent records on abort)
    print("open transaction:", offsets(broker))
    assert broker.log_manager.get_log(TOPIC, 0).last_stable_offset == 4  # its first record
    producer.abort_transaction(30)  # offsets 4-5, ABORT marker at 6
    lg = broker.log_manager.get_log(TOPIC, 0)
    wait_for(lambda: lg.last_stable_offset == lg.high_watermark == 7, "ABORT marker")
    print("after the abort :", offsets(broker))

    print("aborted transactions:", lg.collect_aborted_transactions(0, lg.log_end_offset))

    uncommitted = read_all(bootstrap, "read_uncommitted")
    committed = read_all(bootstrap, "read_committed")
    print("read_uncommitted:", uncommitted)
    print("read_committed  :", committed)
    assert uncommitted == ["paid-0", "paid-1", "paid-2", "refused-0", "refused-1"]
    assert committed == ["paid-0", "paid-1", "paid-2"]

    txn = broker.transaction_coordinator.txn_manager.get_transaction_state("payments-app")[2]
    wait_for(lambda: txn.state.state_name == "CompleteAbort", "CompleteAbort")
    print("coordinator:", txn.state.state_name, "producer id", txn.producer_id,
          "epoch", txn.producer_epoch)
