"""The transactional producer (KIP-98), judged by clients and record readers we did not write.

Each transaction is checked on the broker's log with kafka-python's record reader: our batches are
transactional, under our producer id, and each transaction ends with the control batch (COMMIT or
ABORT marker) the coordinator wrote.  confluent-kafka's read_committed consumer then reads the
topic: on a broker that tells consumers which transactions were aborted it sees exactly the
committed records.  tansu writes the markers but does not report aborted transactions in its
Fetch answers, so there a read_committed consumer sees aborted records too (confluent-kafka's own
transactional producer included): on tansu we check what is committed is read, and the markers.

Both brokers run these tests; a broker without a transaction coordinator (one that does not
advertise EndTxn) would skip them with that reason.
"""

from __future__ import annotations

import asyncio
import struct

import pytest
from readback import fetch_batches, read_confluent
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.aio import AIOKafkaProducer
from kafkacore.errors import (
    IllegalStateError,
    InvalidProducerEpochError,
    ProducerFencedError,
    TransactionAbortedError,
)
from kafkacore.network.client import NetworkClient
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.transaction_manager import ConsumerGroupMetadata, State

ABORT, COMMIT = 0, 1
_txn_ids = iter(range(10**6))


@pytest.fixture
def txn_bootstrap(broker):
    """The broker's address, if it has a transaction coordinator."""
    from kafkacore.metadata import Metadata

    with NetworkClient(broker.bootstrap, Metadata()) as client:
        node = client.least_loaded_node()
        client.await_ready(node, 10000)
        if ApiKey.END_TXN not in client.broker_api_versions(node):
            pytest.skip(f"the {broker.kind} broker has no transaction coordinator (no EndTxn)")
    return broker.bootstrap


def txn_id() -> str:
    return f"txn-{next(_txn_ids)}-{id(object())}"


def producer(bootstrap: str, tid: str | None = None, **settings) -> KafkaProducer:
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid or txn_id(),
                      **settings)
    return p


def log_of(bootstrap: str, topic: str, partition: int) -> list[tuple]:
    """The partition's log as kafka-python reads it: ("data", producer id, [values]) for each
    data batch, ("marker", producer id, COMMIT or ABORT) for each control batch."""
    out = []
    for batch in fetch_batches(bootstrap, topic, partition):
        if batch.is_control_batch:
            (record,) = list(batch)
            _version, kind = struct.unpack(">hh", record.key)
            out.append(("marker", batch.producer_id, kind))
        else:
            assert batch.is_transactional, "a batch of a transaction must say so"
            out.append(("data", batch.producer_id, [r.value for r in batch]))
    return out


def transactions_of(entries: list[tuple]) -> list[tuple[int, list[bytes]]]:
    """Group a log's data batches by the marker that ends them: [(COMMIT or ABORT, values)]."""
    done, open_values = [], []
    for entry in entries:
        if entry[0] == "data":
            open_values += entry[2]
        else:
            done.append((entry[2], open_values))
            open_values = []
    assert not open_values, f"records with no marker after them: {open_values}"
    return done


def read_committed(broker, topic: str, partitions: int, committed: list[bytes]) -> None:
    rows = read_confluent(broker.bootstrap, topic, partitions, expected=len(committed),
                          timeout_s=20, config={"isolation.level": "read_committed"})
    values = [r.value for r in rows]
    if broker.kind == "tansu":
        # tansu does not report aborted transactions: what is committed must be there.
        assert set(committed) <= set(values)
    else:
        assert sorted(values) == sorted(committed)


def test_commit_and_abort_judged_by_markers_and_read_committed(broker, txn_bootstrap, make_topic):
    topic = make_topic(2)
    with producer(txn_bootstrap) as p:
        p.init_transactions()
        tm = p.transaction_manager
        assert tm.state is State.READY and tm.producer_id >= 0
        expected = {0: [], 1: []}
        committed = []
        for n, (prefix, commit) in enumerate([(b"c1-", True), (b"a1-", False), (b"c2-", True)]):
            p.begin_transaction()
            futures = [p.send(topic, prefix + b"%d" % i, partition=i % 2) for i in range(6)]
            if commit:
                p.commit_transaction()
                committed += [prefix + b"%d" % i for i in range(6)]
                assert [f.get(0).partition for f in futures] == [0, 1] * 3
            else:
                p.flush()  # written, then aborted: the marker is what hides them
                p.abort_transaction()
            for part in (0, 1):
                expected[part].append(
                    (COMMIT if commit else ABORT, [prefix + b"%d" % i for i in range(part, 6, 2)]))
            assert tm.state is State.READY, n
        for part in (0, 1):
            entries = log_of(txn_bootstrap, topic, part)
            assert {e[1] for e in entries} == {tm.producer_id}
            assert transactions_of(entries) == expected[part]
    read_committed(broker, topic, 2, committed)


def test_unsent_records_of_an_aborted_transaction_fail(broker, txn_bootstrap, make_topic):
    topic = make_topic(1)
    # linger.ms: the records are still in the accumulator when the abort comes.
    with producer(txn_bootstrap, linger_ms=60000) as p:
        p.init_transactions()
        p.begin_transaction()
        futures = [p.send(topic, b"never-%d" % i) for i in range(5)]
        # The partition joins the transaction while its batch lingers (as Java adds it at
        # send()), so the abort writes a marker there, with none of the records before it.
        tm = p.transaction_manager
        wait_until(lambda: tm.is_send_to_partition_allowed((topic, 0)),
                   "the partition added to the transaction")
        p.abort_transaction()
        for f in futures:
            with pytest.raises(TransactionAbortedError):
                f.get(5)
        # The producer carries on with the next transaction.
        p.begin_transaction()
        ok = p.send(topic, b"kept")
        p.commit_transaction()
        assert ok.get(0).offset >= 0
    # With transaction version 1 our coordinator marks every partition added, as Kafka's
    # does; tansu's only those its transaction wrote to.  With version 2 (ours) no partition
    # is added before a batch reaches its leader: the abort bumps the epoch and marks none.
    assert tm.transaction_v2 == (broker.kind == "kafkacore")
    aborted = []
    assert transactions_of(log_of(txn_bootstrap, topic, 0)) == aborted + [(COMMIT, [b"kept"])]


def test_zombie_is_fenced_and_none_of_its_records_become_visible(broker, txn_bootstrap,
                                                                 make_topic):
    topic = make_topic(1)
    tid = txn_id()
    with producer(txn_bootstrap, tid) as zombie, producer(txn_bootstrap, tid) as successor:
        zombie.init_transactions()
        zombie.begin_transaction()
        written = [zombie.send(topic, b"zombie-%d" % i) for i in range(3)]
        zombie.flush()  # on the log, in the zombie's open transaction
        assert all(f.get(0).offset >= 0 for f in written)
        # The successor's InitProducerId bumps the epoch and aborts what the zombie left open.
        successor.init_transactions()
        late = zombie.send(topic, b"zombie-late")
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
            zombie.commit_transaction()
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
            late.get(5)
        # Fenced is fatal: the zombie can only be closed.
        with pytest.raises(ProducerFencedError):
            zombie.abort_transaction()
        with pytest.raises(ProducerFencedError):
            zombie.begin_transaction()
        successor.begin_transaction()
        successor.send(topic, b"successor")
        successor.commit_transaction()
        zombie_pid = zombie.transaction_manager.producer_id
    assert transactions_of(log_of(txn_bootstrap, topic, 0)) == [
        (ABORT, [b"zombie-0", b"zombie-1", b"zombie-2"]),
        (COMMIT, [b"successor"]),
    ]
    assert successor.transaction_manager.producer_id == zombie_pid  # same id, newer epoch
    assert successor.transaction_manager.producer_epoch > 0
    read_committed(broker, topic, 1, [b"successor"])


def test_calls_out_of_order_are_refused(txn_bootstrap, make_topic):
    topic = make_topic(1)
    with producer(txn_bootstrap) as p:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.send(topic, b"x")
        with pytest.raises(IllegalStateError, match="init_transactions"):
            p.begin_transaction()
        p.init_transactions()
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            p.send(topic, b"x")
        with pytest.raises(IllegalStateError):
            p.commit_transaction()
        with pytest.raises(IllegalStateError, match="called once"):
            p.init_transactions()
        p.begin_transaction()
        with pytest.raises(IllegalStateError):
            p.begin_transaction()
        p.abort_transaction()  # nothing sent: no request at all
        assert p.transaction_manager.state is State.READY
    with KafkaProducer(bootstrap_servers=txn_bootstrap) as plain:
        with pytest.raises(IllegalStateError, match="transactional.id"):
            plain.init_transactions()


@pytest.mark.parametrize("metadata_from", ["confluent", "kafka-python", "group-id"])
def test_send_offsets_to_transaction(txn_bootstrap, make_topic, metadata_from):
    """Consume-transform-produce: the input's offsets commit with the output (KIP-447)."""
    source, sink = make_topic(1), make_topic(1)
    group = f"g-{txn_id()}"
    if metadata_from == "confluent":
        from confluent_kafka import Consumer

        consumer = Consumer({"bootstrap.servers": txn_bootstrap, "group.id": group})
        group_metadata = consumer.consumer_group_metadata()
        consumer.close()
    elif metadata_from == "kafka-python":
        from kafka.structs import ConsumerGroupMetadata as KafkaPythonGroupMetadata

        group_metadata = KafkaPythonGroupMetadata(group, -1, "", None)
    else:
        group_metadata = group
    assert ConsumerGroupMetadata.of(group_metadata).group_id == group
    with producer(txn_bootstrap) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(sink, b"out")
        p.send_offsets_to_transaction({(source, 0): 42}, group_metadata)
        p.commit_transaction()
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": txn_bootstrap, "group.id": group,
                         "isolation.level": "read_committed"})
    try:
        (committed,) = consumer.committed([TopicPartition(source, 0)], timeout=20)
    finally:
        consumer.close()
    assert committed.offset == 42


def test_librdkafka_group_metadata_is_read():
    # Bytes of confluent-kafka 2.x's consumer_group_metadata(), with and without an instance id.
    plain = ConsumerGroupMetadata.of(b"CGMDv2:" + struct.pack("=i", 7) + b"grp\x00m-1\x00\x01")
    assert (plain.group_id, plain.generation_id, plain.member_id, plain.group_instance_id) == (
        "grp", 7, "m-1", None)
    static = ConsumerGroupMetadata.of(
        b"CGMDv2:" + struct.pack("=i", -1) + b"grp\x00\x00\x00inst7\x00")
    assert (static.generation_id, static.member_id, static.group_instance_id) == (-1, "", "inst7")
    with pytest.raises(ValueError, match="librdkafka"):
        ConsumerGroupMetadata.of(b"nonsense")
    with pytest.raises(TypeError, match="group_metadata"):
        ConsumerGroupMetadata.of(3.5)


def test_asyncio_transaction(broker, txn_bootstrap, make_topic):
    topic = make_topic(1)

    async def main():
        async with AIOKafkaProducer(bootstrap_servers=txn_bootstrap,
                                    transactional_id=txn_id()) as p:
            await p.init_transactions()
            async with p.transaction():
                await p.send(topic, b"aio-committed")
            with pytest.raises(RuntimeError, match="boom"):
                async with p.transaction():
                    await p.send(topic, b"aio-aborted")
                    await p.flush()
                    raise RuntimeError("boom")

    asyncio.run(main())
    assert transactions_of(log_of(txn_bootstrap, topic, 0)) == [
        (COMMIT, [b"aio-committed"]), (ABORT, [b"aio-aborted"])]
    read_committed(broker, topic, 1, [b"aio-committed"])


def test_an_expired_batch_is_recovered_by_an_epoch_bump(broker, txn_bootstrap, make_topic):
    """A batch that times out leaves its sequence in doubt: the transaction becomes abortable,
    and its abort bumps the epoch (InitProducerId with our id and epoch, KIP-360) so that the
    same producer goes on, as Kafka 4's does."""
    topic = make_topic(1)
    with producer(txn_bootstrap, linger_ms=0, request_timeout_ms=1000,
                  delivery_timeout_ms=1500) as p:
        p.init_transactions()
        tm = p.transaction_manager
        pid, epoch = tm.producer_id, tm.producer_epoch
        p.begin_transaction()
        p.send(topic, b"before").get(10)
        # Java's record-send-total counts the records handed to a Produce request.
        sent_before = p.metrics()["record-send-total"]
        with broker.paused():
            doomed = p.send(topic, b"expired")
            with pytest.raises(Exception, match="delivery.timeout.ms"):
                doomed.get(15)
        # Sent (nearly always: linger.ms=0), the doomed request waits in the resumed broker's
        # socket and is written late. Wait for it: written after the abort's marker it would open
        # a transaction the coordinator does not know, which the next commit's marker ends (a
        # "hanging transaction"). Kafka's brokers refuse that write since KIP-890 verifies the
        # partition; tansu does not.  On a loaded machine the batch may instead expire in the
        # accumulator before the sender ever sends it: then nothing can be written.
        doomed_sent = p.metrics()["record-send-total"] > sent_before
        if doomed_sent:
            wait_until(lambda: [b"expired"] in [e[2] for e in log_of(txn_bootstrap, topic, 0)],
                       "the expired batch's request reaches the log once the broker runs again")
        assert tm.state is State.ABORTABLE_ERROR
        with pytest.raises(Exception, match="delivery.timeout.ms"):
            p.commit_transaction()  # the transaction cannot commit now
        p.abort_transaction()
        assert (tm.producer_id, tm.producer_epoch) == (pid, epoch + 1)
        assert tm.state is State.READY
        p.begin_transaction()
        p.send(topic, b"after")
        p.commit_transaction()
    (aborted, aborted_values), (committed, committed_values) = transactions_of(
        log_of(txn_bootstrap, topic, 0))
    assert (aborted, committed, committed_values) == (ABORT, COMMIT, [b"after"])
    # written (if it was sent), then hidden by the abort
    assert aborted_values == ([b"before", b"expired"] if doomed_sent else [b"before"])
    read_committed(broker, topic, 1, [b"after"])


def test_offsets_in_every_client_shape():
    from confluent_kafka import TopicPartition as ConfluentTopicPartition
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaPythonTopicPartition

    from kafkacore.producer import _offsets

    assert _offsets({("a", 0): 5}) == {("a", 0): (5, None, -1)}
    assert _offsets({KafkaPythonTopicPartition("a", 1): OffsetAndMetadata(7, "m", 3)}) == {
        ("a", 1): (7, "m", 3)}
    assert _offsets([ConfluentTopicPartition("b", 2, 9)]) == {("b", 2): (9, None, -1)}
    with pytest.raises(ValueError, match="no offsets"):
        _offsets({})
    with pytest.raises(ValueError, match="not a partition and an offset"):
        _offsets({("a", 0): -1})


def test_transaction_version_2_gives_every_transaction_its_own_epoch(broker, txn_bootstrap,
                                                                      make_topic):
    """Our broker finalizes transaction.version 2: each EndTxn v5 answers the next epoch and the
    producer takes it, every partition from sequence 0; Produce v12 added the partitions (no
    AddPartitionsToTxn).  tansu does not finalize it: the epoch stays, as in version 1."""
    topic = make_topic(2)
    with producer(txn_bootstrap) as p:
        p.init_transactions()
        tm = p.transaction_manager
        pid, epoch = tm.producer_id, tm.producer_epoch
        v2 = broker.kind == "kafkacore"
        for n in range(3):
            p.begin_transaction()
            assert tm.transaction_v2 == v2
            for i in range(4):
                p.send(topic, b"t%d-%d" % (n, i), partition=i % 2)
            p.commit_transaction()
            assert (tm.producer_id, tm.producer_epoch) == (pid, epoch + (n + 1 if v2 else 0))
    # Transaction n is written at its epoch and its marker at the next one (version 2).
    step = 1 if v2 else 0
    expected = [(epoch + step * n + step * control, bool(control))
                for n in range(3) for control in (0, 1)]
    for partition in (0, 1):
        seen = [(b.producer_epoch, b.is_control_batch)
                for b in fetch_batches(txn_bootstrap, topic, partition)]
        assert [x for i, x in enumerate(seen) if i == 0 or x != seen[i - 1]] == expected
    read_committed(broker, topic, 2, [b"t%d-%d" % (n, i) for n in range(3) for i in range(4)])
