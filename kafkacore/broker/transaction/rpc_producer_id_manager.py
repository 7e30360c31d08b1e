"""``RPCProducerIdManager``: a broker of a cluster gives out producer ids from blocks the
controller hands it (KIP-730).

InitProducerId, and the transaction coordinator when an epoch runs out, take ids here one at a
time from the current block of 1000.  This thread asks the controller for blocks
(AllocateProducerIds, with the broker's id and epoch): the first as soon as the broker is
registered, the next once :data:`PREFETCH_THRESHOLD` of the current one is given out,
so a busy broker finds its next block waiting.  Taking an id never waits: without a block (the
controller is away, or the prefetch has not come back yet) it raises
``COORDINATOR_LOAD_IN_PROGRESS``, which clients retry (Kafka answers the same rather than
``REQUEST_TIMED_OUT``, which older clients take as fatal), and asks for one.

Ids never repeat across restarts of this broker or of the controller: a block is on the
controller's disk before it is given, and a restarted broker asks for a new one (what was left
of its old block is skipped).  See docs/broker/controller.rst.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kafkacore import errors
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.producer_ids_block import (
    MAX_PRODUCER_ID,
    ProducerIdsBlock,
)
from kafkacore.broker.server_common.rate_limited_log import RateLimitedLog
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: Kafka's ``PID_PREFETCH_THRESHOLD``: the next block is asked for once this share of the
#: current one is given out.
PREFETCH_THRESHOLD = 0.9
#: The pause after a failed AllocateProducerIds, doubling up to the next bound.
RETRY_BACKOFF_S = 0.05
MAX_RETRY_BACKOFF_S = 1.0
#: How long one turn waits to be asked for a block before it looks at shutdown again.
IDLE_WAIT_S = 1.0


class RPCProducerIdManager(ShutdownableThread):
    """Producer ids from the controller's blocks; the thread that fetches them."""

    def __init__(self, broker_id: int,
                 controller: Callable[[], tuple[InterBrokerClient, int] | None]) -> None:
        """``controller()``: the broker's connection to the controller and its broker epoch,
        or None while the broker is not registered."""
        super().__init__(f"rpc-producer-id-manager-{broker_id}")
        self.broker_id = broker_id
        self.controller = controller
        # Lock order: leaf (taken under TransactionMetadata.lock). Guards the four fields
        # below and the setting and clearing of _wanted.
        self._lock = threading.Lock()
        self._current: ProducerIdsBlock | None = None
        self._next_id = 0  # the next id of _current to give out
        self._next_block: ProducerIdsBlock | None = None  # prefetched
        self._received_end = 0  # the end of the last block received: a new one starts after it
        #: set when a block is wanted (the first one from the start)
        self._wanted = threading.Event()
        self._wanted.set()
        self._stopping = threading.Event()
        self._backoff_s = RETRY_BACKOFF_S  # this thread only
        #: why blocks do not come, said once per interval (this thread only)
        self._failures = RateLimitedLog(log)

    # -- the ids ----------------------------------------------------------------------------------

    def generate_producer_id(self) -> int:
        """The next id; ``CoordinatorLoadInProgressError`` (retriable) while there is no block."""
        with self._lock:
            block = self._current
            if block is None or self._next_id > block.last_producer_id:
                if self._next_block is None:
                    self._wanted.set()
                    raise errors.CoordinatorLoadInProgressError(
                        "no block of producer ids from the controller yet; retry")
                block = self._current = self._next_block
                self._next_block = None
                self._next_id = block.first_producer_id
            producer_id = self._next_id
            self._next_id += 1
            used = producer_id - block.first_producer_id + 1
            if self._next_block is None and used >= block.size * PREFETCH_THRESHOLD:
                self._wanted.set()
            return producer_id

    def has_next_block(self) -> bool:
        """Whether the next block is already here (prefetched), so that the current one can run
        out without a retriable error."""
        with self._lock:
            return self._next_block is not None

    # -- the thread -------------------------------------------------------------------------------

    def initiate_shutdown(self) -> None:
        self._stopping.set()  # cuts a back-off short
        super().initiate_shutdown()

    def wakeup(self) -> None:
        self._wanted.set()

    def do_work(self) -> bool:
        """One turn: wait (bounded) until a block is wanted, then ask the controller."""
        if not self._wanted.wait(IDLE_WAIT_S) or self._stopping.is_set():
            return not self._stopping.is_set()
        channel = self.controller()
        if channel is None:  # not registered yet: the lifecycle manager is on it, and the
            self._stopping.wait(RETRY_BACKOFF_S)  # block is wanted as soon as it is done
            return True
        client, broker_epoch = channel
        try:
            response = client.send(ApiKey.ALLOCATE_PRODUCER_IDS, 0, {
                "broker_id": self.broker_id, "broker_epoch": broker_epoch})
        except OSError as exc:
            self._failures.log("unreachable", "broker %d: AllocateProducerIds failed: %s",
                               self.broker_id, exc)
            self._back_off()
            return True
        error = response["error_code"]
        if error != Errors.NONE:
            # STALE_BROKER_EPOCH: the controller restarted or fenced us for good, and the
            # lifecycle manager registers again; the next turn asks with the new epoch.
            self._failures.log("refused", "broker %d: AllocateProducerIds refused: %s",
                               self.broker_id, errors.for_code(error).code_name)
            self._back_off()
            return True
        if not self._take(response["producer_id_start"], response["producer_id_len"]):
            self._failures.log("bad block", "broker %d: the controller sent producer ids %d "
                               "(%d of them), not after the last block; refused",
                               self.broker_id, response["producer_id_start"],
                               response["producer_id_len"])
            self._back_off()
        return True

    def _take(self, first: int, size: int) -> bool:
        """Keep the block the controller sent, unless it is no block or does not start after
        the last one (a controller that lost its log would hand out ids already given)."""
        with self._lock:
            if first < self._received_end or size <= 0 or first > MAX_PRODUCER_ID - size:
                return False
            block = ProducerIdsBlock(self.broker_id, first, size)
            self._received_end = block.next_block_first_id
            if self._current is None:
                self._current, self._next_id = block, first
            else:
                self._next_block = block
            self._wanted.clear()
        self._backoff_s = RETRY_BACKOFF_S
        log.info("broker %d: producer ids %d-%d from the controller", self.broker_id, first,
                 block.last_producer_id)
        return True

    def _back_off(self) -> None:
        self._stopping.wait(self._backoff_s)
        self._backoff_s = min(self._backoff_s * 2, MAX_RETRY_BACKOFF_S)
