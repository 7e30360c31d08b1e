"""A leader change while a fetch, a truncation or an ISR change is in flight.

The unit tests drive each interleaving by hand on real logs in temporary directories: a fetch
answered by the old leader arrives after this replica became leader (or follows a newer epoch),
the ISR expiration decides while a role change waits for the lock, and the controller gets an
AlterPartition decided on a partition state it has moved past.  The cluster test drives the same
races under load on a real cluster (move_leader, a controlled shutdown, an isolation healed) and
checks that the three replicas hold the same log and every acknowledged record is read back once.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from readback import read_confluent
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.log import Log
from kafkacore.broker.metadata.partition_state import PartitionState
from kafkacore.broker.server.partition import Partition
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import (
    Errors,
    FencedLeaderEpochError,
    InvalidUpdateVersionError,
    NotLeaderOrFollowerError,
)
from kafkacore.testing.cluster import Cluster

ME, OLD_LEADER, OTHER = 1, 2, 3


def batch(values):
    b = MemoryRecordsBuilder(1 << 16)
    for i, v in enumerate(values):
        b.append(1_700_000_000_000 + i, None, v)
    b.close()
    return bytes(b.build())


def follower(tmp_path):
    """A replica on broker ME following OLD_LEADER at epoch 1, and the old leader's log."""
    leader_log = Log(tmp_path / "leader" / "t-0")
    leader_log.append_as_leader(batch([b"a", b"b"]), leader_epoch=1)
    partition = Partition("t", 0, uuid.uuid4(), Log(tmp_path / "me" / "t-0"), ME, None, 30_000)
    partition.make_follower(PartitionState(OLD_LEADER, 1, [ME, OLD_LEADER, OTHER],
                                           [ME, OLD_LEADER, OTHER]))
    return partition, leader_log


def test_a_fetch_answered_by_the_old_leader_is_not_appended_by_the_new_leader(tmp_path):
    partition, leader_log = follower(tmp_path)
    fetched = leader_log.read(0, 1 << 20).records  # the fetch under epoch 1 is in flight ...
    partition.make_leader(PartitionState(ME, 2, [ME, OLD_LEADER, OTHER], [ME, OLD_LEADER, OTHER]))
    with pytest.raises(NotLeaderOrFollowerError):  # ... and lands after the election
        partition.append_records_to_follower(fetched, 2, leader_epoch=1)
    assert partition.log.log_end_offset == 0
    # The new leader's own appends carry its epoch from offset 0.
    info, _, _ = partition.append_records_to_leader(batch([b"mine"]), 1)
    assert info.first_offset == 0
    assert [b.partition_leader_epoch for b in iter_batches(partition.log.read(0, 1 << 20).records)] \
        == [2]


def test_an_append_says_whether_it_moved_the_high_watermark(tmp_path):
    """Only an append that moves the HW can complete a waiting acks=all produce: the leader
    alone in its ISR moves it at once (and its acks=all is met), a leader with followers in
    the ISR waits for them."""
    alone = Partition("t", 0, uuid.uuid4(), Log(tmp_path / "alone" / "t-0"), ME, None, 30_000)
    alone.make_leader(PartitionState(ME, 1, [ME], [ME]))
    info, hw_moved, replicated = alone.append_records_to_leader(batch([b"a", b"b"]), -1)
    assert hw_moved and replicated and alone.high_watermark == info.last_offset + 1 == 2
    assert alone.check_enough_replicas_reach_offset(2) == (True, Errors.NONE)
    led_log = Log(tmp_path / "led" / "t-0")
    led_log.high_watermark = 0  # a replica's own HW, as the ReplicaManager gives it
    led = Partition("t", 0, uuid.uuid4(), led_log, ME, None, 30_000)
    led.make_leader(PartitionState(ME, 1, [ME, OTHER], [ME, OTHER]))
    info, hw_moved, replicated = led.append_records_to_leader(batch([b"a"]), -1)
    assert not hw_moved and not replicated and led.high_watermark == 0
    assert led.check_enough_replicas_reach_offset(info.last_offset + 1) == (False, Errors.NONE)
    assert led.update_follower_fetch_state(OTHER, 1)[0]  # the follower's fetch moves it
    assert led.check_enough_replicas_reach_offset(info.last_offset + 1) == (True, Errors.NONE)
    # The next append waits for the follower again.
    info, hw_moved, replicated = led.append_records_to_leader(batch([b"b"]), -1)
    assert (info.first_offset, hw_moved, replicated) == (1, False, False)


def test_a_fetch_under_an_old_epoch_is_not_appended_after_following_a_new_leader(tmp_path):
    partition, leader_log = follower(tmp_path)
    fetched = leader_log.read(0, 1 << 20).records
    partition.make_follower(PartitionState(OTHER, 2, [ME, OLD_LEADER, OTHER], [ME, OTHER]))
    with pytest.raises(FencedLeaderEpochError):
        partition.append_records_to_follower(fetched, 2, leader_epoch=1)
    assert partition.log.log_end_offset == 0
    info = partition.append_records_to_follower(fetched, 2, leader_epoch=2)
    assert (info.first_offset, info.last_offset) == (0, 1)


def test_a_truncation_decided_as_follower_is_not_applied_by_the_new_leader(tmp_path):
    partition, leader_log = follower(tmp_path)
    partition.append_records_to_follower(leader_log.read(0, 1 << 20).records, 2, leader_epoch=1)
    partition.make_leader(PartitionState(ME, 2, [ME, OLD_LEADER, OTHER], [ME, OLD_LEADER, OTHER]))
    with pytest.raises(NotLeaderOrFollowerError):
        partition.truncate_as_follower(0, leader_epoch=1)
    assert partition.log.log_end_offset == 2


def test_an_append_waits_for_a_role_change_holding_the_lock(tmp_path):
    # The fetcher's append and the election serialise on the partition's lock: whichever comes
    # second sees the other's result.
    partition, leader_log = follower(tmp_path)
    fetched = leader_log.read(0, 1 << 20).records
    outcome = []
    with partition.lock:
        t = threading.Thread(target=lambda: outcome.append(_try_append(partition, fetched)))
        t.start()
        t.join(0.2)
        assert t.is_alive()  # blocked on the lock the role change holds
        partition.make_leader(PartitionState(ME, 2, [ME, OLD_LEADER, OTHER],
                                             [ME, OLD_LEADER, OTHER]))
    t.join(10)
    assert outcome == ["refused"] and partition.log.log_end_offset == 0


def _try_append(partition, records):
    try:
        partition.append_records_to_follower(records, 2, leader_epoch=1)
        return "appended"
    except NotLeaderOrFollowerError:
        return "refused"


def test_the_isr_shrink_is_decided_and_recorded_under_the_lock(tmp_path):
    partition = Partition("t", 0, uuid.uuid4(), Log(tmp_path / "t-0"), ME, None, 10)
    partition.make_leader(PartitionState(ME, 1, [ME, OLD_LEADER, OTHER], [ME, OLD_LEADER]))
    partition.remote[OLD_LEADER].last_caught_up_time_ms = 0  # OLD_LEADER lags
    # OTHER caught up: an expansion is pending, and no shrink is decided over it.
    assert partition.update_follower_fetch_state(OTHER, 0)[1] == [ME, OLD_LEADER, OTHER]
    assert partition.maybe_shrink_isr() is None
    partition.abandon_pending_isr()
    assert partition.maybe_shrink_isr() == [ME]
    assert partition.pending_isr.isr == [ME]
    assert partition.maybe_shrink_isr() is None  # one AlterPartition at a time
    # A role change waiting on the lock wins over a shrink that has not decided yet.
    partition.abandon_pending_isr()
    decided = []
    with partition.lock:
        t = threading.Thread(target=lambda: decided.append(partition.maybe_shrink_isr()))
        t.start()
        t.join(0.2)
        partition.make_follower(PartitionState(OTHER, 2, [ME, OLD_LEADER, OTHER], [ME, OTHER]))
    t.join(10)
    assert decided == [None] and partition.pending_isr is None


def test_the_controller_refuses_an_isr_change_on_an_old_partition_epoch(tmp_path):
    controller = QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))
    for b in (1, 2, 3):
        controller.register_broker(b, "127.0.0.1", 9000 + b, f"incarnation-{b}")
    error, _, info = controller.create_topic("t", 1, 3, {})
    part = info.partitions[0]
    epoch, leader = part.partition_epoch, part.leader
    shrunk = [r for r in part.replicas if r != next(x for x in part.replicas if x != leader)]
    # Decided on the current state: accepted, and the partition epoch moves.
    error, after = controller.alter_partition(leader, uuid.UUID(info.topic_id), 0,
                                              part.leader_epoch, shrunk, epoch)
    assert error == 0 and after.partition_epoch == epoch + 1 and after.isr == shrunk
    # Decided on the state before that change (Kafka: INVALID_UPDATE_VERSION), nothing changes.
    error, now = controller.alter_partition(leader, uuid.UUID(info.topic_id), 0,
                                            part.leader_epoch, part.replicas, epoch)
    assert error == InvalidUpdateVersionError.errno
    assert now.isr == shrunk and now.partition_epoch == epoch + 1


# -- under load, on a real cluster ------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_leader_changes_under_load_keep_the_replicas_identical(tmp_path):
    with Cluster(3, log_dir=tmp_path, config={"replica.lag.time.max.ms": "2000",
                                              "broker.session.timeout.ms": "4000"}) as c:
        topic = "race"
        assert create_topics(c.bootstrap_servers, {topic: 1}, replication_factor=3,
                             configs={"min.insync.replicas": "2"}) == {topic: 0}
        c.wait_for_isr(topic, 0, [1, 2, 3])
        c.wait_for_topic(topic)
        producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all",
                                 enable_idempotence=True, linger_ms=2, retry_backoff_ms=50,
                                 request_timeout_ms=5000, delivery_timeout_ms=120_000,
                                 max_block_ms=120_000, reconnect_backoff_max_ms=200)
        acked, failed, lock = [], [], threading.Lock()
        stop = threading.Event()

        def on_ack(metadata, exception, value):
            with lock:
                (failed if exception is not None else acked).append(exception or value)

        def send():
            i = 0
            while not stop.is_set():
                value = b"v%07d" % i
                producer.send(topic, value, partition=0,
                              callback=lambda m, e, v=value: on_ack(m, e, v))
                i += 1
                if i % 200 == 0:
                    time.sleep(0.01)

        sender = threading.Thread(target=send, name="race-sender", daemon=True)
        sender.start()
        try:
            for _ in range(2):
                for target in (1, 2, 3):  # move_leader under load
                    c.wait_for_isr(topic, 0, [1, 2, 3], timeout_s=60)
                    c.move_leader(topic, 0, target)
                leader = c.leader_of(topic, 0)
                c.stop(leader)  # controlled shutdown under load
                c.restart(leader)
                c.wait_for_isr(topic, 0, [1, 2, 3], timeout_s=60)
                leader = c.leader_of(topic, 0)
                c.isolate(leader)  # the old leader keeps its fetchers' race going
                try:
                    c.wait_for_leader_change(topic, 0, leader)
                finally:
                    c.heal(leader)
        finally:
            stop.set()
            sender.join(30)
            producer.flush(120)
            producer.close(30)
        c.wait_for_isr(topic, 0, [1, 2, 3], timeout_s=60)
        with lock:
            assert failed == [] and len(acked) > 1000
            values = list(acked)
        rows = read_confluent(c.bootstrap_servers, topic, 1, len(values), timeout_s=90)
        got = [r.value for r in sorted(rows, key=lambda r: r.offset)]
        assert sorted(got) == sorted(values) and len(set(got)) == len(got)
        # Every replica holds the same batches at the same offsets (once the followers caught
        # up): what a late fetch or truncation would have broken.
        end = len(got)
        logs = {}
        for b in (1, 2, 3):
            logs[b] = _batches_on_disk(tmp_path, b, topic, end)
        assert logs[1] == logs[2] == logs[3]


def _batches_on_disk(base, broker, topic, end):
    """(base offset, last offset, CRC) of every batch of broker ``broker``'s replica, read from
    its segment files once they reach ``end``."""
    directory = base / f"broker-{broker}" / f"{topic}-0"

    def batches():
        data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
        found = [(b.base_offset, b.last_offset, b.crc) for b in iter_batches(data)]
        return found if found and found[-1][1] + 1 >= end else None

    return [x for x in wait_until(batches, f"broker {broker}'s log reaching {end}", 60)
            if x[0] < end]


def test_a_new_leader_stops_fetching_before_it_leads(tmp_path):
    """In-process controller and two brokers: broker 2 follows broker 1; the test holds broker
    2's partition lock (as an in-flight follower append would) and moves the leadership to it.
    Broker 2 must drop the partition from its fetcher *before* it waits for that lock to become
    leader (Kafka's ``makeLeaders``), so nothing fetched from the old leader lands after."""
    from kafkacore.broker.controller.controller_server import ControllerServer
    from kafkacore.broker.server.broker_server import Broker

    controller = ControllerServer({"node.id": 0, "process.roles": "controller",
                                   "log.dirs": str(tmp_path / "c")}).start()
    brokers = []
    try:
        for i in (1, 2):
            brokers.append(Broker({
                "node.id": i, "process.roles": "broker", "log.dirs": str(tmp_path / f"b{i}"),
                "controller.quorum.bootstrap.servers": controller.bootstrap_servers,
                "broker.heartbeat.interval.ms": "100", "replica.fetch.backoff.ms": "50",
            }).start())
        quorum = controller.controller
        wait_until(lambda: quorum.active_brokers() == {1, 2}, "both brokers registered")
        with quorum.lock:
            error, _, info = quorum.create_topic("t", 1, 2, {})
        assert error == 0
        if info.partitions[0].leader != 1:
            assert quorum.elect_leader("t", 0, 1) == 0
        follower = brokers[1].replica_manager
        wait_until(lambda: follower.fetcher_manager is not None
                   and follower.fetcher_manager.fetcher_for(("t", 0)) == 1,
                   "broker 2 fetching t-0 from broker 1")
        partition = follower.partitions[("t", 0)]
        with partition.lock:
            assert quorum.elect_leader("t", 0, 2) == 0
            wait_until(lambda: follower.fetcher_manager.fetcher_for(("t", 0)) is None,
                       "the fetcher removed while the partition cannot yet lead", bound_s=10)
            assert not partition.is_leader
        wait_until(lambda: partition.is_leader, "broker 2 leads")
    finally:
        for b in reversed(brokers):
            b.stop()
        controller.stop()
