"""``ProducerIdManager``: producer ids that are never handed out twice, even across restarts.

Kafka's controller hands brokers blocks of ids and records each block in its metadata log
(KIP-730).  A single broker does the same with a file: it writes the end of the block it is about
to use (fsync'd, then renamed into place) before giving out the first id of that block, so after
a crash it starts at the next block and may skip ids, never repeat them.

In a cluster every broker answers InitProducerId, and we have no AllocateProducerIds request to
the controller yet (KIP-730): each broker then gives out ids from its own range, starting at
``broker id << 40`` (:data:`BROKER_ID_SPACE_BITS`), so two producers never get the same id from
two brokers (they would fence each other's epochs and sequences).
"""

from __future__ import annotations

import threading
from pathlib import Path

from kafkacore.broker.server_common.files import replace_atomically
from kafkacore.errors import KafkaStorageError

#: Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``
PRODUCER_ID_BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"
#: In a cluster, broker N gives out ids from ``N << BROKER_ID_SPACE_BITS`` on.
BROKER_ID_SPACE_BITS = 40


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
