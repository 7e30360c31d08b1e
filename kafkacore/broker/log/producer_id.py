"""``ProducerIdManager``: a broker alone hands out producer ids that are never handed out twice,
even across restarts.

In a cluster the controller owns the producer ids: it hands each broker blocks of 1000 and
records each block in its metadata log (KIP-730), and the broker gives out the ids of its block
(:class:`~kafkacore.broker.transaction.rpc_producer_id_manager.RPCProducerIdManager`).  A broker
alone (no ``process.roles``, ``LocalBroker``) has no controller to ask, and is the only one
handing out ids: it does the same with a file.  It writes the end of the block it is about to
use (fsync'd, then renamed into place) before giving out the first id of that block, so after a
crash it starts at the next block and may skip ids, never repeat them.  See
docs/broker/idempotence.rst and docs/broker/controller.rst.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kafkacore.broker.server_common.files import replace_atomically
from kafkacore.broker.server_common.producer_ids_block import PRODUCER_ID_BLOCK_SIZE
from kafkacore.errors import KafkaStorageError

FILE_NAME = "producer-id-block"


class ProducerIdManager:
    def __init__(self, log_dir: str | Path, block_size: int = PRODUCER_ID_BLOCK_SIZE,
                 first_id: int = 0) -> None:
        self.path = Path(log_dir) / FILE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.block_size = block_size
        # Lock order: leaf (taken under TransactionMetadata.lock). Guards the block and its file.
        self._lock = threading.Lock()
        try:
            text = self.path.read_text().strip()
            self._next = int(text) if text else 0
        except FileNotFoundError:
            self._next = 0
        except ValueError as exc:
            raise KafkaStorageError(f"{self.path} is damaged: {exc}") from None
        self._next = max(self._next, first_id)
        self._block_end = self._next  # nothing reserved yet in this run

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next >= self._block_end:
                self._reserve(self._next + self.block_size)
            pid = self._next
            self._next += 1
            return pid

    def _reserve(self, end: int) -> None:
        replace_atomically(self.path, f"{end}\n".encode())
        self._block_end = end
