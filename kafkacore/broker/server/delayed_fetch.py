"""``DelayedFetch``: a fetch waiting in the purgatory for data (Kafka's ``DelayedFetch``).

A Fetch that finds fewer than ``min_bytes`` waits up to ``max_wait_ms`` (a long poll).  It is
watched on each partition it asked for; an append (for followers, who read up to the log end) or a
high watermark move (for consumers, who read up to the HW) calls ``check_and_complete`` on the
partition's key, and the fetch is answered as soon as enough data is there, not when the wait
ends.  It also completes at once if a partition changed leader or its log was truncated below
the fetch offset, so the client hears about it.  See docs/broker/replication.rst.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.broker.server_common.purgatory import DelayedOperation

#: Kafka's ``IsolationLevel.READ_COMMITTED`` (Fetch and ListOffsets ``isolation_level``)
READ_COMMITTED = 1


class DelayedFetch(DelayedOperation):
    __slots__ = ("replica_manager", "params", "infos", "respond")

    def __init__(self, delay_ms: int, params: Any, infos: list[Any], replica_manager: Any,
                 respond: Callable[[list[dict[str, Any]]], None]) -> None:
        super().__init__(delay_ms)
        self.replica_manager = replica_manager
        self.params = params
        self.infos = infos
        self.respond = respond

    def try_complete(self) -> bool:
        accumulated = 0
        for info in self.infos:
            partition = self.replica_manager.get_partition(info.topic, info.partition)
            if partition is None or not partition.is_leader:
                return self.force_complete()  # the client must learn the new leader
            if 0 <= info.current_leader_epoch != partition.leader_epoch:
                return self.force_complete()
            log = partition.log
            if self.params.is_follower:
                end = log.log_end_offset
            elif self.params.isolation_level == READ_COMMITTED:  # up to the LSO
                end = log.last_stable_offset
            else:
                end = log.high_watermark
            if end < info.fetch_offset:  # truncated below the fetch offset: answer now
                return self.force_complete()
            if end > info.fetch_offset:
                if self.params.min_bytes <= 1:
                    return self.force_complete()
                # Counted from batch positions: the data is read (and checked) once, when
                # the fetch is answered, not at every append that wakes this check.
                accumulated += log.readable_bytes(info.fetch_offset, info.max_bytes, end)
        if accumulated >= self.params.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.respond(self.replica_manager.read_from_local_log(self.params, self.infos))

    def on_expiration(self) -> None:
        pass

