"""``FetchSessionHandler``: a fetcher's side of an incremental fetch session (KIP-227; Kafka's
``FetchSessionHandler`` in the clients).

The handler remembers what the leader's session holds for us: each partition as we last sent it.
The first fetch is full (epoch 0, every partition); once the leader answers with a session id,
each next fetch carries the session id and the next epoch, and names only the partitions added or
changed since (a follower's fetch offset moves with every append) and those to forget.  Any
trouble (an error answer, a lost connection, an answer naming partitions we did not ask for) makes
the next fetch full again, on the same session id so that the leader closes the old session.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kafkacore.broker.server.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    PartitionKey,
    next_epoch,
)
from kafkacore.errors import Errors

log = logging.getLogger(__name__)


@dataclass
class FetchRequestData:
    """One fetch to send: its session id and epoch, the partitions to name and to forget."""

    session_id: int
    epoch: int
    to_send: dict[PartitionKey, dict[str, Any]]
    to_forget: list[PartitionKey] = field(default_factory=list)

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    """The session with one leader.  Used by one fetcher thread only: no lock."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH  # of the next fetch
        #: each partition as the leader's session holds it (as we last sent it)
        self.session_partitions: dict[PartitionKey, dict[str, Any]] = {}

    def build(self, next_partitions: dict[PartitionKey, dict[str, Any]]) -> FetchRequestData:
        """The next fetch of ``next_partitions`` (key -> the partition's fields as sent)."""
        if self.epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self.session_partitions = dict(next_partitions)
            return FetchRequestData(self.session_id, self.epoch, dict(next_partitions))
        to_send = {key: data for key, data in next_partitions.items()
                   if self.session_partitions.get(key) != data}
        to_forget = [key for key in self.session_partitions if key not in next_partitions]
        self.session_partitions = dict(next_partitions)
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(self, sent: FetchRequestData, response: dict[str, Any],
                        answered: set[PartitionKey]) -> bool:
        """Move to the next epoch, or back to a full fetch.  False if the answer must be
        ignored (an error, or partitions that contradict the session)."""
        error = response["error_code"]
        if error != Errors.NONE:
            log.info("fetch session %d with broker %d failed: %s", self.session_id,
                     self.node_id, Errors(error).name)
            if error == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if sent.is_full and answered != set(self.session_partitions) \
                or not sent.is_full and not answered <= set(self.session_partitions):
            log.info("broker %d answered fetch session %d with partitions it was not asked for "
                     "(or left some out of a full answer): starting over", self.node_id,
                     self.session_id)
            self.epoch = INITIAL_EPOCH
            return False
        self.session_id = response["session_id"]
        # No session (the leader keeps none, or had no room): ask for one again next time.
        self.epoch = INITIAL_EPOCH if self.session_id == INVALID_SESSION_ID \
            else next_epoch(sent.epoch)
        return True

    def handle_error(self) -> None:
        """The fetch got no answer: the next one is full and closes this session."""
        self.epoch = INITIAL_EPOCH
