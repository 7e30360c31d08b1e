"""``KafkaRaftManager``'s inbox and its senders' queues are bounded, and a message they cannot
take is dropped in the open: counted in the manager's statistics and the controller's quorum
status, and logged at WARNING once per interval (docs/broker/quorum.rst)."""

from __future__ import annotations

import logging

import pytest

from kafkacore.broker.controller.kafka_network_channel import SENDER_QUEUE_BOUND
from kafkacore.broker.controller.kafka_raft_manager import INBOX_BOUND, KafkaRaftManager
from kafkacore.errors import Errors
from kafkacore.raft.raft_messages import Envelope, VoteRequest, VoteResponse

pytestmark = pytest.mark.pure_python  # the driver's bookkeeping: no process, no socket

LOGGER = "kafkacore.broker.controller.kafka_raft_manager"
CHANNEL_LOGGER = "kafkacore.broker.controller.kafka_network_channel"
#: never dialled: the manager is not started, so its senders connect to nobody
VOTERS = {1: ("127.0.0.1", 9), 2: ("127.0.0.1", 9), 3: ("127.0.0.1", 9)}


def vote_answer(correlation_id: int) -> Envelope:
    """Voter 2's answer to voter 1's Vote request in epoch 1, vote granted."""
    return Envelope(2, 1, correlation_id, VoteResponse(Errors.NONE, -1, 1, True))


def test_a_full_inbox_drops_an_answer_counted_and_logged_once_per_interval(tmp_path, caplog):
    # Not started: no driver thread empties the inbox, so the test fills it exactly.
    manager = KafkaRaftManager(1, VOTERS, tmp_path, cluster_id="raft-inbox")
    try:
        for correlation_id in range(INBOX_BOUND):
            manager.deliver(vote_answer(correlation_id))
        assert manager.statistics()["inbox_dropped"] == 0  # full, and nothing lost yet

        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            for correlation_id in range(INBOX_BOUND, INBOX_BOUND + 3):
                manager.deliver(vote_answer(correlation_id))

        stats = manager.statistics()
        assert (stats["inbox_dropped"], stats["send_dropped"]) == (3, 0)
        # A fresh log: no snapshot, none installed, the log starting at 0.
        assert (stats["log_start_offset"], stats["latest_snapshot_offset"],
                stats["snapshots_installed"]) == (0, -1, 0)
        drops = [r for r in caplog.records if r.name == LOGGER and "inbox full" in r.getMessage()]
        # One WARNING for the interval; the two after it held back at DEBUG, counted for the
        # next WARNING line (RateLimitedLog, tests/broker/test_rate_limited_log.py).
        assert [(r.levelno, r.getMessage()) for r in drops] == [
            (logging.WARNING, f"raft 1: inbox full ({INBOX_BOUND} messages), dropped a "
                              "VoteResponse from 2 (1 dropped since the start)"),
            (logging.DEBUG, f"raft 1: inbox full ({INBOX_BOUND} messages), dropped a "
                            "VoteResponse from 2 (2 dropped since the start)"),
            (logging.DEBUG, f"raft 1: inbox full ({INBOX_BOUND} messages), dropped a "
                            "VoteResponse from 2 (3 dropped since the start)"),
        ]
    finally:
        manager.shutdown()


def test_a_full_sender_queue_drops_a_message_counted_and_logged_once_per_interval(
        tmp_path, caplog):
    # Not started: no sender thread takes from the queues, so the test fills one exactly.
    manager = KafkaRaftManager(1, VOTERS, tmp_path, cluster_id="raft-send")
    try:
        def ask(correlation_id: int) -> Envelope:
            return Envelope(1, 2, correlation_id, VoteRequest(1, 1, 0, 0, 2, pre_vote=True))

        for correlation_id in range(SENDER_QUEUE_BOUND):
            manager.channel.send(ask(correlation_id))
        assert manager.statistics()["send_dropped"] == 0  # full, and nothing lost yet

        with caplog.at_level(logging.DEBUG, logger=CHANNEL_LOGGER):
            for correlation_id in range(SENDER_QUEUE_BOUND, SENDER_QUEUE_BOUND + 3):
                manager.channel.send(ask(correlation_id))

        stats = manager.statistics()
        assert (stats["inbox_dropped"], stats["send_dropped"]) == (0, 3)
        drops = [r for r in caplog.records
                 if r.name == CHANNEL_LOGGER and "full" in r.getMessage()]
        line = f"raft 1: queue to 2 full ({SENDER_QUEUE_BOUND} messages), dropped a VoteRequest"
        assert [(r.levelno, r.getMessage()) for r in drops] == [
            (logging.WARNING, f"{line} (1 dropped since the start)"),
            (logging.DEBUG, f"{line} (2 dropped since the start)"),
            (logging.DEBUG, f"{line} (3 dropped since the start)"),
        ]
    finally:
        manager.shutdown()
