"""The Raft core of the metadata quorum (KIP-595), as Kafka's ``raft`` module has it.

What lives here, I/O-free: the protocol is a state machine driven by ``poll(now_ms)`` and
``handle(envelope, now_ms)``, each returning the messages to send; time, the network and the disk
belong to whoever drives it (a simulated world in the model test, the controllers'
``KafkaRaftManager`` in :mod:`kafkacore.broker.controller`).

- :mod:`kafkacore.raft.raft_messages`: Vote (a pre-vote too), BeginQuorumEpoch, EndQuorumEpoch,
  Fetch and FetchSnapshot as plain dataclasses with the fields of Kafka's message schemas, and the
  ``LeaderChange`` control record;
- :mod:`kafkacore.raft.raft_log`: the log interface the protocol needs (append with an epoch,
  truncate to a diverging point, the end offset of an epoch, the high watermark) and
  ``MemoryRaftLog``;
- :mod:`kafkacore.raft.raw_snapshot_reader`: ``RawSnapshotReader``, a frozen snapshot of the state
  machine (KIP-630) as bytes, served in chunks by FetchSnapshot, and ``OffsetAndEpoch``, its id;
- :mod:`kafkacore.raft.kafka_metadata_log`: ``KafkaMetadataLog``, the same log fsynced to a file
  (the controllers' quorum), its snapshots in files beside it;
- :mod:`kafkacore.raft.line_file`: a file of CRC-checked lines reopened with a torn last line
  cut off, the reader of ``KafkaMetadataLog`` and of the broker's ``MetadataLog`` both;
- :mod:`kafkacore.raft.quorum_state_store`: the persisted election state (epoch, voted id,
  leader id), with a file store that is written whole and fsynced before a vote is granted;
- :mod:`kafkacore.raft.epoch_state`: the seven states (unattached, voted, prospective,
  candidate, leader, follower, resigned);
- :mod:`kafkacore.raft.quorum_state`: ``QuorumState``, the only way from one state to another,
  which checks each transition's invariants and persists the election state first;
- :mod:`kafkacore.raft.kafka_raft_client`: ``KafkaRaftClient``, elections, replication by Fetch
  and the high watermark, snapshots and FetchSnapshot.

It imports nothing of :mod:`kafkacore.broker` (only :mod:`kafkacore.errors`): the broker will build
on it, not the other way round.
"""

from kafkacore.raft.kafka_raft_client import KafkaRaftClient, RaftConfig
from kafkacore.raft.quorum_state_store import (
    ElectionState,
    FileQuorumStateStore,
    MemoryQuorumStateStore,
    QuorumStateStore,
)
from kafkacore.raft.raft_log import LogEntry, MemoryRaftLog, RaftLog
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch, RawSnapshotReader

__all__ = [
    "ElectionState",
    "FileQuorumStateStore",
    "KafkaRaftClient",
    "LogEntry",
    "MemoryQuorumStateStore",
    "MemoryRaftLog",
    "OffsetAndEpoch",
    "QuorumStateStore",
    "RaftConfig",
    "RaftLog",
    "RawSnapshotReader",
]
