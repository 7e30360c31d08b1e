"""Tutorial 24: one record, from send() to a consumer group's commit, on our own brokers.

We start a controller and two brokers in this process (so that we can look at their live
objects), create a topic whose one partition has two replicas, and follow a single record:

1. the producer's ``send()`` returns a future; the Sender ships the batch in a ProduceRequest;
2. the leader's reactor reads the request (a processor), a handler thread runs ``KafkaApis``,
   the leader appends the batch to its log: its log end offset (LEO) moves to 1;
3. with ``acks=all`` the answer waits in the leader's produce purgatory until the follower has
   the record, that is until the high watermark (HW) passes it; we hold the follower back to
   see the wait;
4. a consumer's Fetch reads below the HW only: it waits in the fetch purgatory (a long poll)
   while the record is in the leader's log but not yet replicated;
5. we let the follower go: it appends, fetches again, the leader's HW moves to 1, and both waits
   end at once;
6. a consumer in the group ``billing`` reads the record over the wire and commits offset 1, which
   is itself a record appended (acks=all) to the ``__consumer_offsets`` topic.

See docs/producer/life_of_a_record.rst.

    python tutorials/24_one_record_end_to_end.py
"""

# needs: cluster

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.broker import Broker
from kafkacore.broker.controller.controller_server import ControllerServer
from kafkacore.broker.server.replica_manager import FetchParams, FetchPartitionInfo
from kafkacore.protocol.api_keys import ApiKey

TOPIC, GROUP = "payments", "billing"


def wait_until(predicate: Callable[[], object], what: str, bound_s: float = 30.0) -> None:
    deadline = time.monotonic() + bound_s
    while not predicate():
        assert time.monotonic() < deadline, f"not within {bound_s} s: {what}"
        time.sleep(0.01)


def start(tmp: Path) -> tuple[ControllerServer, list[Broker]]:
    controller = ControllerServer({"node.id": 0, "process.roles": "controller",
                                   "log.dirs": str(tmp / "controller")}).start()
    brokers = [Broker({
        "node.id": i, "process.roles": "broker", "log.dirs": str(tmp / f"broker-{i}"),
        "controller.quorum.bootstrap.servers": controller.bootstrap_servers,
        "broker.heartbeat.interval.ms": "100",
        "offsets.topic.num.partitions": "1",  # Kafka's 50 would be 50 partitions to create
        "group.initial.rebalance.delay.ms": "0",
    }).start() for i in (1, 2)]
    wait_until(lambda: controller.controller.active_brokers() == {1, 2}, "both brokers registered")
    return controller, brokers


def produce_requests_read(broker: Broker) -> int:
    """How many ProduceRequests the broker's network threads (processors) have read."""
    key = f"requests.api_key.{int(ApiKey.PRODUCE)}"
    assert broker.socket_server is not None
    return sum(int(p.statistics().get(key, 0)) for p in broker.socket_server.processors)


def main(controller: ControllerServer, brokers: list[Broker]) -> None:
    bootstrap = brokers[0].bootstrap_servers
    create_topics(bootstrap, {TOPIC: 1}, replication_factor=2)
    key = (TOPIC, 0)
    wait_until(lambda: all(key in b.replica_manager.partitions for b in brokers), "both replicas")
    leader = next(b for b in brokers if b.replica_manager.partitions[key].is_leader)
    follower = next(b for b in brokers if b is not leader)
    on_leader = leader.replica_manager.partitions[key]
    on_follower = follower.replica_manager.partitions[key]
    wait_until(lambda: sorted(on_leader.isr) == [1, 2], "both replicas in sync")
    log = on_leader.log
    print(f"{TOPIC}-0: leader broker {leader.broker_id}, follower broker {follower.broker_id}, "
          f"ISR {sorted(on_leader.isr)}")
    print(f"  leader's log: LEO {log.log_end_offset}, HW {log.high_watermark}")

    # Hold the follower back: its fetcher thread appends under the partition's lock.
    on_follower.lock.acquire()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        future = producer.send(TOPIC, key=b"order-7", value=b"42.00 EUR")
        print("send() returned a future; done:", future.done())

        # 2. A processor of the leader read the request and queued it; a handler appended it:
        # one more offset in the leader's log, not yet below the HW.
        wait_until(lambda: log.log_end_offset == 1, "the leader's append")
        print(f"  the leader's processors read {produce_requests_read(leader)} ProduceRequest; "
              "a handler thread appended it")
        assert produce_requests_read(leader) == 1
        produces = leader.replica_manager.produce_purgatory
        wait_until(lambda: produces.num_delayed() == 1, "the acks=all answer in the purgatory")
        print(f"  leader's log: LEO {log.log_end_offset}, HW {log.high_watermark}; "
              f"produce purgatory holds {produces.num_delayed()} answer; done: {future.done()}")
        assert log.high_watermark == 0 and not future.done()
        # Without transactions the last stable offset (LSO) is the HW.
        assert log.last_stable_offset == log.high_watermark

        # 4. A consumer's Fetch, the way KafkaApis.handle_fetch_request makes it: replica id -1
        # (a consumer), wait up to 30 s for at least 1 byte.
        answers: list[Any] = []
        fetch = FetchParams(replica_id=-1, max_wait_ms=30_000, min_bytes=1,
                            max_bytes=1 << 20, isolation_level=0)
        wanted = [FetchPartitionInfo(TOPIC, on_leader.topic_id, 0, fetch_offset=0,
                                     current_leader_epoch=-1, max_bytes=1 << 20)]
        leader.replica_manager.fetch_messages(fetch, wanted, answers.append)
        print(f"  a consumer's Fetch at offset 0: answered {len(answers)}, waiting in the fetch "
              "purgatory (the record is above the HW)")
        assert answers == []
    finally:
        # 5. Let the follower go.
        on_follower.lock.release()
    metadata = future.result(30)
    print(f"follower caught up: HW {log.high_watermark}; the producer's future holds "
          f"{metadata.topic}-{metadata.partition} @ offset {metadata.offset}")
    wait_until(lambda: answers, "the consumer's long poll to end")
    (part,) = answers[0]
    # The answer's records are a region of the segment file (sent with sendfile), not a copy.
    print(f"  the waiting Fetch was answered: {len(part['records'])} bytes, "
          f"high_watermark {part['high_watermark']}, last_stable_offset "
          f"{part['last_stable_offset']}")
    assert metadata.offset == 0 and part["high_watermark"] == 1 and len(part["records"]) > 0
    part["records"].close()
    producer.close()

    # 6. A consumer group reads it over the wire and commits the next offset to read.
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([tp])
    records: list[Any] = []
    deadline = time.monotonic() + 30
    while not records and time.monotonic() < deadline:
        records = consumer.poll(timeout_ms=500).get(tp, [])
    assert len(records) == 1, f"the consumer read {len(records)} records in 30 s, not 1"
    (record,) = records
    print(f"consumer read {record.key!r}: {record.value!r} at offset {record.offset}")
    consumer.commit()  # the position: offset 1, the next one to read
    print(f"group {GROUP!r} committed offset {consumer.committed(tp)}")
    assert consumer.committed(tp) == 1
    consumer.close()
    offsets = next(p for b in brokers for k, p in b.replica_manager.partitions.items()
                   if k[0] == "__consumer_offsets" and p.is_leader)
    print(f"  __consumer_offsets-{offsets.index}: LEO {offsets.log.log_end_offset}, "
          f"HW {offsets.log.high_watermark} (the commit is a record too)")
    assert offsets.log.high_watermark >= 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        controller, brokers = start(Path(tmp))
        try:
            main(controller, brokers)
        finally:
            for broker in reversed(brokers):
                broker.stop()
            controller.stop()
