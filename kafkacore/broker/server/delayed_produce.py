"""``DelayedProduce``: an acks=all produce waiting in the purgatory for the ISR (Kafka's
``DelayedProduce``).

The leader appended the batches at once; the answer waits until every in-sync replica has them,
that is until the partition's high watermark passes the last offset of each batch.  Followers
move the high watermark by fetching, so the purgatory is told (``check_and_complete`` on the
partition's key) whenever a high watermark moves; the timer expires the operation with
REQUEST_TIMED_OUT after the request's ``timeout_ms``.  See docs/broker/replication.rst.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkacore.broker.server_common.purgatory import DelayedOperation
from kafkacore.errors import Errors


@dataclass
class ProducePartitionStatus:
    """One partition of the request: the offset the HW must reach, and its answer so far."""

    required_offset: int
    response: dict[str, Any]
    acks_pending: bool = True


class DelayedProduce(DelayedOperation):
    __slots__ = ("replica_manager", "statuses", "respond")

    def __init__(self, delay_ms: int, statuses: dict[tuple[str, int], ProducePartitionStatus],
                 replica_manager: Any,
                 respond: Callable[[dict[tuple[str, int], dict[str, Any]]], None]) -> None:
        super().__init__(delay_ms)
        self.replica_manager = replica_manager
        self.statuses = statuses
        self.respond = respond
        for status in statuses.values():
            if status.acks_pending:  # what the answer says if the timer wins
                status.response["error_code"] = Errors.REQUEST_TIMED_OUT

    def try_complete(self) -> bool:
        for key, status in self.statuses.items():
            if not status.acks_pending:
                continue
            partition = self.replica_manager.get_partition(*key)
            if partition is None:
                done, error = True, Errors.NOT_LEADER_OR_FOLLOWER  # the partition left this broker
            else:
                done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            if done:
                status.acks_pending = False
                status.response["error_code"] = error
        if all(not s.acks_pending for s in self.statuses.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.respond({key: s.response for key, s in self.statuses.items()})

    def on_expiration(self) -> None:
        pass  # counted by the purgatory (expired); the answer carries REQUEST_TIMED_OUT
