"""``ProducerIdsBlock``: a range of producer ids the controller gave one broker (KIP-730).

The controller hands them out (:class:`~kafkacore.broker.controller.producer_id_control_manager.ProducerIdControlManager`),
a broker of a cluster gives out the ids of its block one by one
(:class:`~kafkacore.broker.transaction.rpc_producer_id_manager.RPCProducerIdManager`), and a
broker alone reserves its blocks in a file
(:class:`~kafkacore.broker.log.producer_id.ProducerIdManager`).  See docs/broker/controller.rst.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``: the ids of one block.
PRODUCER_ID_BLOCK_SIZE = 1000
#: The largest producer id (an int64 in every batch header).
MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True)
class ProducerIdsBlock:
    """``size`` ids from ``first_producer_id`` on, given to broker ``assigned_broker_id``."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        """The block's last id (inclusive)."""
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        """The first id after the block: where the next block starts."""
        return self.first_producer_id + self.size
