"""``ProducerIdControlManager``: the controller hands out producer ids in blocks (KIP-730).

Two producers with the same producer id would fence each other's epochs and mix their
sequence numbers in every partition they share, so an id must be given out once in the
cluster's life.  The controller is the one place that can promise it: each AllocateProducerIds
of a registered broker gets the next :data:`PRODUCER_ID_BLOCK_SIZE` ids, and the end of that
block goes to the metadata log as a ``ProducerIdsRecord`` before the broker hears of it.  A
restarted controller replays the records (or reads its snapshot) and continues after the last
block; a block a broker never used is skipped, never handed out again.  See
docs/broker/controller.rst.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.broker.metadata.metadata_log import Record
from kafkacore.broker.server_common.producer_ids_block import (
    MAX_PRODUCER_ID,
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdsBlock,
)
from kafkacore.errors import Errors, IllegalStateError


class ProducerIdControlManager:
    """The next free producer id (Kafka's ``lastProducerId``: the end of the last block handed
    out), changed only by replaying ``ProducerIdsRecord``; guarded by ``QuorumController.lock``."""

    def __init__(self, check_broker_epoch: Callable[[int, int], int],
                 block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        """``check_broker_epoch(broker id, epoch)``: NONE if the broker is registered at that
        epoch (Kafka's ``ClusterControlManager.checkBrokerEpoch``), else its error."""
        self.check_broker_epoch = check_broker_epoch
        self.block_size = block_size
        self.next_producer_id = 0

    def generate_next_producer_id(self, broker_id: int, broker_epoch: int,
                                  ) -> tuple[int, str | None, ProducerIdsBlock | None,
                                             list[Record]]:
        """(error, message, the block, the records to commit before answering).  The state
        changes only when the records are replayed (:meth:`replay`)."""
        error = self.check_broker_epoch(broker_id, broker_epoch)
        if error != Errors.NONE:
            return error, f"broker {broker_id} is not registered at epoch {broker_epoch}", \
                None, []
        first = self.next_producer_id
        if first > MAX_PRODUCER_ID - self.block_size:
            return (Errors.UNKNOWN_SERVER_ERROR, "the producer ids are exhausted: the next "
                    "block would pass the largest int64", None, [])
        block = ProducerIdsBlock(broker_id, first, self.block_size)
        record = {"type": "ProducerIdsRecord", "broker_id": broker_id,
                  "broker_epoch": broker_epoch, "producer_ids_end": block.next_block_first_id}
        return Errors.NONE, None, block, [record]

    def replay(self, record: Record) -> None:
        """A ``ProducerIdsRecord``: the ids before its end are taken.  The ends only grow; one
        that does not is damage, and the controller refuses to start on it (as Kafka's)."""
        end = record["producer_ids_end"]
        if end <= self.next_producer_id:
            raise IllegalStateError(f"ProducerIdsRecord ends at {end}, not after the last block "
                                    f"(next id {self.next_producer_id}): {record}")
        self.next_producer_id = end

    def snapshot(self) -> dict[str, Any]:
        """What a snapshot keeps of it."""
        return {"next_producer_id": self.next_producer_id}

    def load_snapshot(self, snapshot: dict[str, Any]) -> None:
        """The state a snapshot kept (0 for a snapshot from before blocks were recorded)."""
        self.next_producer_id = snapshot.get("next_producer_id", 0)
