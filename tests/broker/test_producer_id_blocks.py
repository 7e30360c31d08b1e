"""Producer ids from the controller, in blocks (KIP-730): the controller never hands out a block
twice, across its restarts (records replayed, or a snapshot); only a broker registered at the
epoch it names gets one; a broker's ``RPCProducerIdManager`` takes its first block once
registered, prefetches the next, answers COORDINATOR_LOAD_IN_PROGRESS while it has none, and
goes on after the controller's restart.  On the 3-broker cluster, confluent-kafka's
transactional producers coordinated by each broker and its idempotent producers get distinct
ids from the controller's blocks (not the per-broker ``broker id << 40`` ranges of before), and
a restarted broker hands out none it gave before.  A real controller over TCP throughout
(``ControllerServer`` in this process, or the cluster's).  See docs/broker/controller.rst.
"""

from __future__ import annotations

import json
import uuid

import pytest
from waits import wait_until

from kafkacore.broker.controller.controller_server import ControllerServer
from kafkacore.broker.controller.producer_id_control_manager import ProducerIdControlManager
from kafkacore.broker.controller.quorum_controller import STATE_LOG_NAME
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.producer_ids_block import (
    MAX_PRODUCER_ID,
    PRODUCER_ID_BLOCK_SIZE,
)
from kafkacore.broker.transaction.rpc_producer_id_manager import (
    PREFETCH_THRESHOLD,
    RPCProducerIdManager,
)
from kafkacore.errors import CoordinatorLoadInProgressError, Errors, IllegalStateError
from kafkacore.protocol.api_keys import ApiKey

BLOCK = PRODUCER_ID_BLOCK_SIZE
PREFETCH_AT = int(BLOCK * PREFETCH_THRESHOLD)  # ids of a block given out when the next is asked


def start_controller(log_dir) -> ControllerServer:
    return ControllerServer({"node.id": 0, "process.roles": "controller",
                             "log.dirs": str(log_dir)}).start()


def connect(server: ControllerServer) -> InterBrokerClient:
    host, port = server.bootstrap_servers.rsplit(":", 1)
    return InterBrokerClient(host, int(port), "producer-id-blocks", 10.0)


def register(client: InterBrokerClient, broker_id: int, incarnation: uuid.UUID) -> int:
    """BrokerRegistration as a broker sends it; the broker epoch."""
    answer = client.send(ApiKey.BROKER_REGISTRATION, 0, {
        "broker_id": broker_id, "cluster_id": "kafkacore-cluster", "incarnation_id": incarnation,
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9000 + broker_id,
                       "security_protocol": 0}], "features": [], "rack": None})
    assert answer["error_code"] == Errors.NONE
    return answer["broker_epoch"]


def allocate(client: InterBrokerClient, broker_id: int, epoch: int) -> tuple[int, int, int]:
    """(error, first id, how many) of one AllocateProducerIds."""
    answer = client.send(ApiKey.ALLOCATE_PRODUCER_IDS, 0,
                         {"broker_id": broker_id, "broker_epoch": epoch})
    return answer["error_code"], answer["producer_id_start"], answer["producer_id_len"]


# -- the controller --------------------------------------------------------------------------------

def test_the_controller_never_hands_out_a_block_twice_across_restarts(tmp_path):
    blocks = []
    incarnations = {b: uuid.uuid4() for b in (1, 2)}
    epochs: dict[int, int] = {}

    def run(order, snapshot_every_change=False):
        server = start_controller(tmp_path)
        client = connect(server)
        try:
            if snapshot_every_change:
                server.controller.metadata_log.max_bytes_between_snapshots = 1
            for b, old in epochs.items():  # a restarted controller knows no epoch yet
                assert allocate(client, b, old) == (Errors.STALE_BROKER_EPOCH, -1, 0)
            epochs.update({b: register(client, b, incarnations[b]) for b in (1, 2)})
            for b in order:
                error, first, size = allocate(client, b, epochs[b])
                assert (error, size) == (Errors.NONE, BLOCK)
                blocks.append(first)
        finally:
            client.close()
            server.stop()
            server.controller.metadata_log.close()

    run([1, 2, 1])
    run([2, 1], snapshot_every_change=True)  # the records replayed; the log snapshotted
    assert not (tmp_path / f"{STATE_LOG_NAME}.log").read_bytes()  # all in the snapshot now
    run([1])  # the snapshot loaded
    # Each block follows the last one handed out, whoever asked and whatever restarted.
    assert blocks == [i * BLOCK for i in range(6)]


def test_only_a_broker_registered_at_that_epoch_gets_a_block(tmp_path):
    server = start_controller(tmp_path)
    client = connect(server)
    try:
        incarnation = uuid.uuid4()
        epoch = register(client, 1, incarnation)
        refused = (Errors.STALE_BROKER_EPOCH, -1, 0)
        assert allocate(client, 7, epoch) == refused  # never registered
        assert allocate(client, 1, epoch + 1) == refused
        assert allocate(client, 1, -1) == refused  # what a stranger who read the id sends
        assert allocate(client, 1, epoch) == (Errors.NONE, 0, BLOCK)  # nothing taken before
        again = register(client, 1, incarnation)  # registered again: the old epoch is stale
        assert allocate(client, 1, epoch) == refused
        assert allocate(client, 1, again) == (Errors.NONE, BLOCK, BLOCK)
    finally:
        client.close()
        server.stop()


def test_the_ids_end_before_the_largest_int64_and_a_going_back_record_is_damage():
    manager = ProducerIdControlManager(lambda broker_id, epoch: Errors.NONE)
    manager.replay({"type": "ProducerIdsRecord", "broker_id": 1, "broker_epoch": 1,
                    "producer_ids_end": MAX_PRODUCER_ID - BLOCK})
    error, _, block, records = manager.generate_next_producer_id(1, 1)
    assert error == Errors.NONE and block is not None
    assert block.last_producer_id == MAX_PRODUCER_ID - 1 and len(records) == 1
    manager.replay(records[0])
    error, message, block, records = manager.generate_next_producer_id(1, 1)
    assert (error, block, records) == (Errors.UNKNOWN_SERVER_ERROR, None, [])
    assert "exhausted" in message
    with pytest.raises(IllegalStateError):
        manager.replay({"type": "ProducerIdsRecord", "broker_id": 2, "broker_epoch": 1,
                        "producer_ids_end": BLOCK})


# -- a broker's RPCProducerIdManager -------------------------------------------------------------

class Registration:
    """What a broker's lifecycle manager holds: its connection to the controller and its
    broker epoch (registered again after the controller's restart)."""

    def __init__(self, incarnation: uuid.UUID) -> None:
        self.incarnation = incarnation
        self.client: InterBrokerClient | None = None
        self.epoch = -1

    def register(self, server: ControllerServer) -> None:
        if self.client is not None:
            self.client.close()
        self.client = connect(server)
        self.epoch = register(self.client, 1, self.incarnation)

    def channel(self) -> tuple[InterBrokerClient, int] | None:
        return None if self.client is None else (self.client, self.epoch)


def test_a_broker_takes_blocks_prefetches_and_goes_on_after_the_controllers_restart(tmp_path):
    server = start_controller(tmp_path)
    registration = Registration(uuid.uuid4())
    registration.register(server)
    manager = RPCProducerIdManager(1, registration.channel)
    try:
        # Not started: no block yet, a retriable error, never a wait.
        with pytest.raises(CoordinatorLoadInProgressError):
            manager.generate_producer_id()
        manager.start()

        def next_id():
            try:
                return (manager.generate_producer_id(),)
            except CoordinatorLoadInProgressError:
                return None

        [first] = wait_until(next_id, "the first block from the controller", 10)
        assert first == 0
        ids = [first] + [manager.generate_producer_id() for _ in range(PREFETCH_AT - 1)]
        # 90 % given out: the next block is asked for, and is waiting when this one ends
        # (allocated by the controller first, then its answer taken by the manager's thread).
        wait_until(manager.has_next_block, "the second block prefetched", 10)
        assert server.controller.producer_ids.next_producer_id == 2 * BLOCK
        # Up to just before the second block's own 90 %.
        ids += [manager.generate_producer_id() for _ in range(BLOCK - 1)]
        assert ids == list(range(BLOCK + PREFETCH_AT - 1))
        # The controller goes away: the ids left in the block are still given out (its
        # prefetch fails), then COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
        server.stop()
        server.controller.metadata_log.close()
        ids += [manager.generate_producer_id() for _ in range(BLOCK - PREFETCH_AT + 1)]
        assert ids == list(range(2 * BLOCK))
        with pytest.raises(CoordinatorLoadInProgressError):
            manager.generate_producer_id()
        # Back, on another port: the broker registers again, and the blocks go on after the
        # last one the controller handed out.
        server = start_controller(tmp_path)
        registration.register(server)
        [after] = wait_until(next_id, "a block from the restarted controller", 10)
        assert after == 2 * BLOCK
    finally:
        manager.shutdown()
        if registration.client is not None:
            registration.client.close()
        server.stop()
    assert not manager.is_alive()


# -- on the cluster, judged by confluent-kafka ---------------------------------------------------

TXN_TOPIC = "__transaction_state"


def _producer_id(producer, stats: list[str]) -> int:
    """The producer id librdkafka says it was given (its statistics' ``eos`` object)."""

    def seen():
        producer.poll(0.05)
        for text in reversed(stats):
            pid = json.loads(text).get("eos", {}).get("producer_id", -1)
            if pid >= 0:
                return (pid,)
        return None

    return wait_until(seen, "librdkafka's statistics naming its producer id", 30)[0]


def _coordinated_by(cluster, broker: int) -> str:
    """A new transactional id whose coordinator is ``broker`` (it is made the leader of a
    ``__transaction_state`` partition if it leads none)."""
    from kafkacore.broker.group.group_metadata_manager import partition_for

    count = next(len(t["partitions"]) for t in cluster.metadata([TXN_TOPIC])["topics"]
                 if t["name"] == TXN_TOPIC)
    led = [p for p in range(count) if cluster.leader_of(TXN_TOPIC, p) == broker]
    if not led:
        cluster.wait_for_isr(TXN_TOPIC, 0, [1, 2, 3])
        cluster.move_leader(TXN_TOPIC, 0, broker)
        led = [0]
    # Every broker sends FindCoordinator's askers there (the old leader no longer answers).
    cluster.wait_for_leader_known(TXN_TOPIC, led[0], broker)
    while True:
        txn_id = f"pid-{uuid.uuid4().hex[:12]}"
        if partition_for(txn_id, count) == led[0]:
            return txn_id


def _send_one(producer, topic: str, transactional: bool) -> None:
    failed = []
    if transactional:
        producer.init_transactions(60)
        producer.begin_transaction()
    producer.produce(topic, b"v", on_delivery=lambda err, msg: err and failed.append(err))
    if transactional:
        producer.commit_transaction(60)
    assert producer.flush(30) == 0 and not failed


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_producers_on_every_broker_get_distinct_ids_from_the_controllers_blocks(cluster):
    from confluent_kafka import Producer
    from support.topics import new_replicated_topic

    topic = new_replicated_topic(cluster)
    ids: dict[str, int] = {}

    def produce(name: str, transactional_id: str | None, bootstrap: str) -> None:
        stats: list[str] = []
        config = {"bootstrap.servers": bootstrap, "enable.idempotence": True,
                  "linger.ms": 5, "statistics.interval.ms": 100, "stats_cb": stats.append}
        if transactional_id is not None:
            config["transactional.id"] = transactional_id
        producer = Producer(config)
        _send_one(producer, topic, transactional_id is not None)
        ids[name] = _producer_id(producer, stats)
        producer.close()

    produce("idempotent", None, cluster.bootstrap_servers)  # from whichever broker it asks
    # (the first transactional id of the session makes __transaction_state)
    produce("first transactional", f"pid-{uuid.uuid4().hex[:12]}", cluster.bootstrap_servers)
    for broker in (1, 2, 3):
        produce(f"coordinated by {broker}", _coordinated_by(cluster, broker),
                cluster.bootstrap_servers)
    for broker in (1, 2, 3):
        produce(f"idempotent via {broker}", None, cluster.broker_address(broker))
    assert len(set(ids.values())) == len(ids), ids
    # From the controller's blocks, which start at 0: below every broker's former range.
    assert all(0 <= pid < 1 << 40 for pid in ids.values()), ids
    # A restarted broker asks for a new block: after every id handed out before.
    cluster.restart(2)
    produce("coordinated by 2, restarted", _coordinated_by(cluster, 2),
            cluster.bootstrap_servers)
    # Broker 2 answered it (its counters start again at its restart).
    init_producer_ids = {b: cluster.statistics(b)["network"].get(
        f"requests.api_key.{int(ApiKey.INIT_PRODUCER_ID)}", 0) for b in (1, 2, 3)}
    assert init_producer_ids[2] >= 1, init_producer_ids
    after = ids.pop("coordinated by 2, restarted")
    assert after > max(ids.values()), (after, ids)
