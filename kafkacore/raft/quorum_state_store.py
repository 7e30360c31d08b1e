"""The election state a voter must not forget: its epoch, its vote, the leader it knows.

Raft's safety rests on a voter never voting twice in one epoch and never going back to an older
epoch, across restarts too.  So every change of epoch, vote or leader is written here before the
voter acts on it (before the VoteResponse that grants a vote leaves), as Kafka's
``FileQuorumStateStore`` writes its ``quorum-state`` file.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass
from typing import Protocol

from kafkacore.errors import CorruptRecordError
from kafkacore.raft.raft_messages import NO_ID


@dataclass(frozen=True, slots=True)
class ElectionState:
    """Kafka's ``ElectionState``: the epoch, the vote cast in it, the leader known for it."""

    epoch: int
    voted_id: int = NO_ID
    leader_id: int = NO_ID

    def has_voted(self) -> bool:
        return self.voted_id != NO_ID

    def has_leader(self) -> bool:
        return self.leader_id != NO_ID


class QuorumStateStore(Protocol):
    """Where the election state is kept; ``write`` returns only once it is durable."""

    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None: ...


class MemoryQuorumStateStore:
    """A store that survives a simulated restart because the simulation keeps the object."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class FileQuorumStateStore:
    """The election state in one small JSON file (Kafka's ``quorum-state``).

    Each write goes to a temporary file that is fsynced and renamed over the old one, and the
    directory is fsynced: a crash leaves the old state or the new one, never half of either.
    """

    FILE_NAME = "quorum-state"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = pathlib.Path(directory) / self.FILE_NAME

    def read(self) -> ElectionState | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
            return ElectionState(
                epoch=int(data["leaderEpoch"]),
                voted_id=int(data["votedId"]),
                leader_id=int(data["leaderId"]),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptRecordError(f"{self.path} is not a quorum state: {e}") from e

    def write(self, state: ElectionState) -> None:
        data = {
            "leaderId": state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": state.voted_id,
            "data_version": 0,
        }
        tmp = self.path.with_name(self.FILE_NAME + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, json.dumps(data).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
