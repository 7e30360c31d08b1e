"""``AlterPartitionManager``: a leader's ISR changes, sent to the controller one at a time.

A leader proposes an ISR shrink or expansion (:class:`~kafkacore.broker.server.partition.Partition`
keeps it pending); this thread sends it as AlterPartition over the broker's connection to the
controller and applies the answer.  See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable

from kafkacore import errors
from kafkacore.broker.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkacore.broker.server.partition import Partition
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)


class AlterPartitionManager(ShutdownableThread):
    """Sends the leaders' ISR changes to the controller, one at a time (Kafka's
    ``AlterPartitionManager``), and applies the controller's answer."""

    def __init__(self, broker_id: int, *,
                 lifecycle: Callable[[], BrokerLifecycleManager | None],
                 on_isr_applied: Callable[[tuple[str, int], bool], None]) -> None:
        """``lifecycle()``: the broker's registration (its channel to the controller and its
        epoch); ``on_isr_applied(partition's key, changed)``: the controller answered, and the
        partition took its ISR (``changed``) or kept its own: waiting produces may complete."""
        super().__init__(f"alter-partition-{broker_id}")
        self.broker_id = broker_id
        self.lifecycle = lifecycle
        self.on_isr_applied = on_isr_applied
        self._queue: queue.Queue[tuple[Partition, list[int]] | None] = queue.Queue()

    def submit(self, partition: Partition, new_isr: list[int]) -> None:
        self._queue.put((partition, new_isr))

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.initiate_shutdown()
        self._queue.put(None)
        self.join(timeout_s)

    def do_work(self) -> bool:
        item = self._queue.get()
        if item is None:
            return False
        partition, new_isr = item
        try:
            self._alter(partition, new_isr)
        except Exception:
            # A bug, not the controller being away (_alter handles that): the change is
            # dropped so a later check can propose it again; the thread logs and goes on.
            partition.abandon_pending_isr()
            raise
        return True

    def _alter(self, partition: Partition, new_isr: list[int]) -> None:
        try:
            result = self._send(partition, new_isr)
        except Exception as exc:  # the controller is away: forget it, retry on next check
            log.info("AlterPartition for %r failed: %s", partition, exc)
            partition.abandon_pending_isr()
            return
        error, leader_epoch, isr, partition_epoch = result
        if error == errors.InvalidUpdateVersionError.errno:
            # Our partition epoch is behind the controller's (an election or another ISR
            # change since).  Kafka waits for the metadata that carries the new state; our
            # image has no partition epochs, so we take the committed state the controller
            # answered with, and the next check asks again from it.
            log.info("AlterPartition for %r refused: INVALID_UPDATE_VERSION; taking the "
                     "controller's state (epoch %d, ISR %s, partition epoch %d)",
                     partition, leader_epoch, isr, partition_epoch)
            if partition.apply_isr(leader_epoch, isr, partition_epoch):
                self.on_isr_applied(partition.key, True)
            return
        if error != Errors.NONE:
            log.info("AlterPartition for %r refused with error %d", partition, error)
            partition.abandon_pending_isr()
            return
        self.on_isr_applied(partition.key, partition.apply_isr(leader_epoch, isr, partition_epoch))

    def _send(self, partition: Partition, new_isr: list[int]) -> tuple[int, int, list[int], int]:
        """One AlterPartition: (error, leader epoch, ISR, partition epoch) as the controller
        decided them."""
        lifecycle = self.lifecycle()
        if lifecycle is None:
            raise ConnectionError("not registered with the controller yet")
        response = lifecycle.controller_channel.send(ApiKey.ALTER_PARTITION, 3, {
            "broker_id": self.broker_id, "broker_epoch": lifecycle.broker_epoch,
            "topics": [{"topic_id": partition.topic_id, "partitions": [{
                "partition_index": partition.index, "leader_epoch": partition.leader_epoch,
                "new_isr_with_epochs": [{"broker_id": r, "broker_epoch": -1} for r in new_isr],
                "leader_recovery_state": 0, "partition_epoch": partition.partition_epoch}]}],
        })
        if response["error_code"] != Errors.NONE:
            return response["error_code"], -1, [], -1
        p = response["topics"][0]["partitions"][0]
        return p["error_code"], p["leader_epoch"], list(p["isr"]), p["partition_epoch"]
