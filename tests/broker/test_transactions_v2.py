"""Transaction version 2 (KIP-890 part 2) on our broker, on the wire.

The broker finalizes ``transaction.version`` 2 in ApiVersions; a producer that speaks it adds
partitions with Produce v12 and offsets with TxnOffsetCommit v5 (no AddPartitionsToTxn, no
AddOffsetsToTxn) and ends each transaction with EndTxn v5, which bumps its epoch: a late write
of an ended transaction (its old epoch) is refused and never reaches a read_committed consumer
(confluent-kafka's); the bumped epoch survives the coordinator's restart.  The transaction
version 1 requests keep their behaviour (tests/broker/test_transactions.py).
See docs/broker/transactions.rst.
"""

from __future__ import annotations

from readback import read_confluent
from support.topics import new_topic
from waits import wait_until

from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

#: what a producer retries: the coordinator is loading, a marker is still being written, a
#: leader is moving
RETRIABLE = {Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
             Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS,
             Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_LEADER_OR_FOLLOWER}


class TransactionV2Client:
    """A transaction version 2 producer's requests, sent raw."""

    def __init__(self, bootstrap: str, txn_id: str, topic: str) -> None:
        host, port = bootstrap.split(":")
        self.client = InterBrokerClient(host, int(port), "tv2", 10.0)
        self.txn_id, self.topic = txn_id, topic

    def settled(self, send):
        """``send()``'s answer once it is not a retriable error."""
        out = []
        wait_until(lambda: out.append(send()) or out[-1][0] not in RETRIABLE,
                   what="an answer that is not retriable", step_s=0.05)
        return out[-1]

    def find_coordinator(self) -> None:
        """FindCoordinator creates __transaction_state, as a producer's first request does."""
        assert self.settled(lambda: (self.client.send(ApiKey.FIND_COORDINATOR, 3, {
            "key": self.txn_id, "key_type": 1})["error_code"],))[0] == Errors.NONE

    def init(self) -> tuple[int, int]:
        self.find_coordinator()
        answer = self.settled(lambda: self._init())
        assert answer[0] == Errors.NONE
        return answer[1], answer[2]

    def _init(self):
        a = self.client.send(ApiKey.INIT_PRODUCER_ID, 4, {
            "transactional_id": self.txn_id, "transaction_timeout_ms": 60000,
            "producer_id": -1, "producer_epoch": -1})
        return a["error_code"], a["producer_id"], a["producer_epoch"]

    def produce(self, pid: int, epoch: int, sequence: int, value: bytes,
                partition: int = 0) -> int:
        def once():
            builder = MemoryRecordsBuilder(1024, producer_id=pid, producer_epoch=epoch,
                                           base_sequence=sequence, is_transactional=True)
            builder.append(0, None, value)
            body = codec.REQUESTS[ApiKey.PRODUCE].body.defaults(12)
            body.update(transactional_id=self.txn_id, acks=-1, timeout_ms=10000, topic_data=[
                {"name": self.topic, "partition_data": [
                    {"index": partition, "records": bytes(builder.build())}]}])
            a = self.client.send(ApiKey.PRODUCE, 12, body)
            return (a["responses"][0]["partition_responses"][0]["error_code"],)
        return self.settled(once)[0]

    def end(self, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
        def once():
            a = self.client.send(ApiKey.END_TXN, 5, {
                "transactional_id": self.txn_id, "producer_id": pid, "producer_epoch": epoch,
                "committed": commit})
            return a["error_code"], a["producer_id"], a["producer_epoch"]
        return self.settled(once)

    def close(self) -> None:
        self.client.close()


def test_the_broker_finalizes_transaction_version_2(tmp_path):
    with Broker({"log.dirs": str(tmp_path)}) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        client = InterBrokerClient(host, int(port), "features", 10.0)
        try:
            answer = client.send(ApiKey.API_VERSIONS, 3, {
                "client_software_name": "tv2", "client_software_version": "1"})
        finally:
            client.close()
    assert {(f["name"], f["min_version"], f["max_version"])
            for f in answer["supported_features"]} == {("transaction.version", 0, 2)}
    assert {(f["name"], f["min_version_level"], f["max_version_level"])
            for f in answer["finalized_features"]} == {("transaction.version", 2, 2)}
    versions = {a["api_key"]: a["max_version"] for a in answer["api_keys"]}
    assert versions[ApiKey.PRODUCE] >= 12 and versions[ApiKey.END_TXN] >= 5


def test_every_transaction_has_its_own_epoch(tmp_path):
    """Commit, a late write of the committed transaction, abort, the abort retried, an abort
    with nothing added, restart, commit: the epoch moves by one per EndTxn, the late write is refused, and a read_committed
    consumer sees exactly the two committed transactions."""
    config = {"log.dirs": str(tmp_path), "num.partitions": "1"}
    with Broker(config) as broker:
        topic = new_topic(broker)
        group = f"g-{topic}"
        tv2 = TransactionV2Client(broker.bootstrap_servers, f"tx-{topic}", topic)
        try:
            pid, epoch = tv2.init()
            # Produce v12 adds the partition: no AddPartitionsToTxn.
            assert tv2.produce(pid, epoch, 0, b"first") == Errors.NONE
            # TxnOffsetCommit v5 adds the group's offsets partition: no AddOffsetsToTxn.
            committed = tv2.client.send(ApiKey.TXN_OFFSET_COMMIT, 5, {
                "transactional_id": tv2.txn_id, "group_id": group, "producer_id": pid,
                "producer_epoch": epoch, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 1,
                     "committed_metadata": ""}]}]})
            assert committed["topics"][0]["partitions"][0]["error_code"] == Errors.NONE
            assert tv2.end(pid, epoch, True) == (Errors.NONE, pid, epoch + 1)

            lg = broker.log_manager.get_log(topic, 0)
            wait_until(lambda: lg.last_stable_offset == lg.high_watermark == 2,
                       what="the COMMIT marker (epoch + 1)")
            # A late retry of the committed transaction's batch: its epoch is over.
            assert tv2.produce(pid, epoch, 1, b"late") == Errors.INVALID_PRODUCER_EPOCH
            assert lg.last_stable_offset == lg.high_watermark == 2

            assert tv2.produce(pid, epoch + 1, 0, b"aborted") == Errors.NONE
            assert tv2.end(pid, epoch + 1, False) == (Errors.NONE, pid, epoch + 2)
            # The abort's answer lost, the producer retries with the epoch it knew.
            assert tv2.end(pid, epoch + 1, False) == (Errors.NONE, pid, epoch + 2)
            assert tv2.end(pid, epoch + 2, True)[0] == Errors.INVALID_TXN_STATE
            # An abort with nothing added (the producer could not know): the epoch moves on.
            assert tv2.end(pid, epoch + 2, False) == (Errors.NONE, pid, epoch + 3)
            offsets = tv2.client.send(ApiKey.OFFSET_FETCH, 7, {
                "group_id": group, "require_stable": True,
                "topics": [{"name": topic, "partition_indexes": [0]}]})
            assert offsets["topics"][0]["partitions"][0]["committed_offset"] == 1
        finally:
            tv2.close()

    with Broker(config) as broker:  # a new coordinator reads the epoch from the log
        tv2 = TransactionV2Client(broker.bootstrap_servers, f"tx-{topic}", topic)
        try:
            assert tv2.produce(pid, epoch + 2, 1, b"late") == Errors.INVALID_PRODUCER_EPOCH
            assert tv2.produce(pid, epoch + 3, 0, b"second") == Errors.NONE
            assert tv2.end(pid, epoch + 3, True) == (Errors.NONE, pid, epoch + 4)
            lg = broker.log_manager.get_log(topic, 0)
            wait_until(lambda: lg.last_stable_offset == lg.high_watermark,
                       what="the COMMIT marker after the restart")
        finally:
            tv2.close()
        got = read_confluent(broker.bootstrap_servers, topic, 1, 2,
                             config={"isolation.level": "read_committed"})
        assert sorted(c.value for c in got) == [b"first", b"second"]
