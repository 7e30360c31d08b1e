"""``Partition``: one partition's replica on this broker, leader or follower (Kafka's ``Partition``).

The leader keeps, for each follower, the log end offset (LEO) the follower reported with its last
fetch, and the last time the follower was caught up.  From them:

- the **high watermark** (HW) is the smallest LEO over the in-sync replicas (ISR): every offset
  below it is on every ISR member, so it survives the loss of any of them but one;
- a follower not caught up for ``replica.lag.time.max.ms`` is **dropped from the ISR**; one that
  catches up again is **added back**.  ISR changes go through the controller (AlterPartition,
  :class:`~kafkacore.broker.server.alter_partition_manager.AlterPartitionManager`) and take effect when it
  accepts them.

See docs/broker/replication.rst.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kafkacore import errors
from kafkacore.broker.log.leader_epoch_cache import LeaderEpochFileCache
from kafkacore.broker.metadata.partition_state import PartitionState
from kafkacore.errors import Errors


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass
class Replica:
    """A follower as its leader sees it (Kafka's ``Replica``)."""

    broker_id: int
    log_end_offset: int = -1  # unknown until it fetches
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0


@dataclass
class PendingIsr:
    """An AlterPartition sent and not yet answered (Kafka's ``PendingExpandIsr``/``Shrink``)."""

    isr: list[int]
    sent_ms: int = field(default_factory=now_ms)


class Partition:
    def __init__(self, topic: str, index: int, topic_id: Any, log: Any, local_broker_id: int,
                 epoch_cache: LeaderEpochFileCache | None, replica_lag_time_max_ms: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.local_broker_id = local_broker_id
        self.epoch_cache = epoch_cache
        log.leader_epoch_cache = epoch_cache
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        #: Kafka's ``leaderIsrUpdateLock``: role changes, ISR changes and HW moves under it.
        # Lock order 6: after the coordinators' and operations' locks, before Log._lock.
        self.lock = threading.RLock()
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.pending_isr: PendingIsr | None = None
        self.remote: dict[int, Replica] = {}
        #: the log end offset when this replica became leader (a follower that reached it
        #: has everything of the current epoch's start and may join the ISR)
        self.leader_epoch_start_offset = 0

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.index}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={self.isr})")

    # -- role changes (from the controller's decisions) -----------------------------------------

    def make_leader(self, state: PartitionState) -> bool:
        """Become (or stay) the leader; True if this is a new leader epoch."""
        with self.lock:
            new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
            self.replicas = list(state.replicas)
            self.partition_epoch = state.partition_epoch
            if new_epoch:
                self.leader_id = self.local_broker_id
                self.leader_epoch = state.leader_epoch
                self.isr = list(state.isr)
                self.pending_isr = None
                leo = self.log.log_end_offset
                if self.epoch_cache is not None:
                    self.epoch_cache.assign(state.leader_epoch, leo)
                self.leader_epoch_start_offset = leo
                now = now_ms()
                # ISR members get a full lag period to fetch before they can be dropped.
                self.remote = {
                    r: Replica(r, last_caught_up_time_ms=now if r in self.isr else 0)
                    for r in self.replicas if r != self.local_broker_id
                }
            self.maybe_increment_leader_hw()
            return new_epoch

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``; True if the leader or its epoch changed (so the fetcher
        must truncate by epoch before fetching again)."""
        with self.lock:
            changed = (state.leader != self.leader_id or state.leader_epoch != self.leader_epoch)
            self.leader_id = state.leader
            self.leader_epoch = state.leader_epoch
            self.partition_epoch = state.partition_epoch
            self.replicas = list(state.replicas)
            self.isr = list(state.isr)
            self.pending_isr = None
            self.remote = {}
            return changed

    # -- the leader's side ----------------------------------------------------------------------

    def append_records_to_leader(self, records: Any, required_acks: int, *,
                                 from_coordinator: bool = False) -> tuple[Any, bool, bool]:
        """Append as leader; refuses acks=all below ``min.insync.replicas`` (Kafka's
        ``appendRecordsToLeader``).  Returns the log's ``LogAppendInfo``, whether the high
        watermark moved (Kafka's ``LeaderHwChange.INCREASED``: only then can a waiting
        produce be done) and, for acks=all, whether the ISR has the batches already (what a
        DelayedProduce's first :meth:`check_enough_replicas_reach_offset` would find: an ISR
        of one always has them).  One pass under the lock, not three, for every partition of
        every Produce."""
        with self.lock:
            if self.leader_id != self.local_broker_id:
                raise errors.NotLeaderOrFollowerError(
                    f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.index}")
            log_ = self.log
            if required_acks == -1 and len(self.isr) < log_.config.min_insync_replicas:
                raise errors.NotEnoughReplicasError(
                    f"{self.topic}-{self.index}: ISR {self.isr} is smaller than "
                    f"min.insync.replicas={log_.config.min_insync_replicas}")
            hw = log_.high_watermark
            info = log_.append_as_leader(records, leader_epoch=self.leader_epoch,
                                         from_coordinator=from_coordinator)
            # Compared, not the step's own answer: a log with no HW of its own (a broker
            # without a controller) has it follow its end, which the append moved.  The ISR
            # checked above cannot have shrunk meanwhile (the lock), so a HW past the batches
            # means acks=all is met.
            new_hw = self._advance_leader_hw()
            return info, new_hw > hw, new_hw > info.last_offset

    def maximal_isr(self) -> list[int]:
        """The ISR the HW must respect: with a pending expansion, the new member too (Kafka's
        ``maximalIsr``: a pending shrink keeps the old ISR until the controller accepts it)."""
        if self.pending_isr is None:
            return self.isr
        return sorted(set(self.isr) | set(self.pending_isr.isr))

    def maybe_increment_leader_hw(self) -> bool:
        """HW = min LEO over the ISR; it never moves back.  True if it moved."""
        with self.lock:
            if self.leader_id != self.local_broker_id:
                return False
            hw = self.log.high_watermark
            return self._advance_leader_hw() > hw

    def _advance_leader_hw(self) -> int:
        """The leader's HW step (under the lock, as leader): the least LEO over the ISR, if
        that is past the HW.  Returns the HW."""
        me = self.local_broker_id
        log_ = self.log
        new_hw = log_.log_end_offset
        for r in self.isr if self.pending_isr is None else self.maximal_isr():
            if r != me:
                replica = self.remote.get(r)
                new_hw = min(new_hw, replica.log_end_offset if replica is not None else -1)
        hw = log_.high_watermark
        if new_hw > hw:
            log_.high_watermark = new_hw
            return new_hw
        return hw

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> tuple[bool, list[int] | None]:
        """A follower fetched from ``fetch_offset`` (= its LEO).  Returns (HW moved, the ISR to
        ask the controller for if the follower has caught up and may rejoin, else None)."""
        with self.lock:
            replica = self.remote.get(replica_id)
            if replica is None or not self.is_leader:
                return False, None
            now = now_ms()
            leader_end = self.log.log_end_offset
            # Kafka's Replica.updateFetchStateOrThrow: caught up if it asked for everything the
            # leader had, now or at its previous fetch.
            if fetch_offset >= leader_end:
                replica.last_caught_up_time_ms = max(replica.last_caught_up_time_ms, now)
            elif fetch_offset >= replica.last_fetch_leader_log_end_offset:
                replica.last_caught_up_time_ms = max(replica.last_caught_up_time_ms,
                                                     replica.last_fetch_time_ms)
            replica.last_fetch_leader_log_end_offset = leader_end
            replica.last_fetch_time_ms = now
            replica.log_end_offset = fetch_offset
            expand = None
            if (replica_id not in self.isr and self.pending_isr is None
                    and fetch_offset >= self.log.high_watermark
                    and fetch_offset >= self.leader_epoch_start_offset):
                expand = sorted(set(self.isr) | {replica_id})
                self.pending_isr = PendingIsr(expand)
            return self.maybe_increment_leader_hw(), expand

    def maybe_shrink_isr(self) -> list[int] | None:
        """Kafka's ``maybeShrinkIsr``: decide and record the shrink under the lock, so that no
        role change, ISR change or pending expansion slips in between the decision and the
        AlterPartition that carries it.  Returns the ISR to ask for, or None."""
        with self.lock:
            out = self.out_of_sync_replicas()
            if not out:
                return None
            new_isr = [r for r in self.isr if r not in out]
            self.pending_isr = PendingIsr(new_isr)
            return new_isr

    def out_of_sync_replicas(self) -> list[int]:
        """ISR members not caught up for ``replica.lag.time.max.ms`` (Kafka's
        ``getOutOfSyncReplicas``)."""
        with self.lock:
            if not self.is_leader or self.pending_isr is not None:
                return []
            now = now_ms()
            return [r for r in self.isr if r != self.local_broker_id and
                    now - self.remote.get(r, Replica(r)).last_caught_up_time_ms
                    > self.replica_lag_time_max_ms]

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """For a DelayedProduce: (done, error code).  Done when the HW passed the batch (every ISR
        member has it), or when this broker stopped leading."""
        with self.lock:
            if self.leader_id != self.local_broker_id:  # (is_leader, for every acks=all Produce)
                return True, Errors.NOT_LEADER_OR_FOLLOWER
            if self.log.high_watermark >= required_offset:
                if len(self.isr) >= self.log.config.min_insync_replicas:
                    return True, Errors.NONE
                return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return False, Errors.NONE

    def apply_isr(self, leader_epoch: int, isr: list[int], partition_epoch: int) -> bool:
        """The controller's answer to our AlterPartition; True if the HW moved."""
        with self.lock:
            self.pending_isr = None
            if not self.is_leader or leader_epoch != self.leader_epoch:
                return False
            self.isr = list(isr)
            self.partition_epoch = partition_epoch
            now = now_ms()
            for r in isr:
                replica = self.remote.get(r)
                if replica is not None:
                    replica.last_caught_up_time_ms = max(replica.last_caught_up_time_ms, now)
            return self.maybe_increment_leader_hw()

    def abandon_pending_isr(self) -> None:
        with self.lock:
            self.pending_isr = None

    # -- the follower's side --------------------------------------------------------------------

    def append_records_to_follower(self, records: Any, leader_high_watermark: int,
                                   leader_epoch: int, leader_log_start_offset: int = -1) -> Any:
        """Append what the leader of ``leader_epoch`` sent, under the lock, if this replica
        still follows at that epoch: a fetch answered before a role change must not write into
        the log of a replica that leads now (or follows someone else).  Returns the append's
        info (None when there was nothing to append) or raises ``NotLeaderOrFollowerError`` /
        ``FencedLeaderEpochError`` and changes nothing."""
        with self.lock:
            self._check_following(leader_epoch)
            info = self.log.append_as_follower(records) if records else None
            self.update_follower_high_watermark(leader_high_watermark)
            # DeleteRecords on the leader: the follower's log starts there too (as far as it
            # has the records), so a new leader does not serve them again.
            if leader_log_start_offset > self.log.log_start_offset:
                self.log.maybe_increment_log_start_offset(
                    min(leader_log_start_offset, self.log.high_watermark))
            return info

    def truncate_as_follower(self, offset: int, leader_epoch: int) -> None:
        """Truncate (the fetcher's epoch check found divergence), under the lock, if this
        replica still follows at ``leader_epoch``."""
        with self.lock:
            self._check_following(leader_epoch)
            self.log.truncate_to(offset)

    def _check_following(self, leader_epoch: int) -> None:
        if self.is_leader or self.leader_id < 0:
            raise errors.NotLeaderOrFollowerError(
                f"{self.topic}-{self.index}: broker {self.local_broker_id} no longer follows "
                f"(leader {self.leader_id})")
        if leader_epoch != self.leader_epoch:
            raise errors.FencedLeaderEpochError(
                f"{self.topic}-{self.index}: fetched under leader epoch {leader_epoch}, now "
                f"{self.leader_epoch}")

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        with self.lock:
            if not self.is_leader and leader_high_watermark >= 0:
                self.log.high_watermark = min(leader_high_watermark, self.log.log_end_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) in this replica's log."""
        if self.epoch_cache is None:
            return max(self.leader_epoch, 0), self.log.log_end_offset
        return self.epoch_cache.end_offset_for(epoch, self.log.log_end_offset)
