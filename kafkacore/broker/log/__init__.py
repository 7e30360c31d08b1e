"""The broker's log on disk: segments, index, recovery, and producer state for idempotence.

Kafka's ``storage`` module: ``Log`` (``UnifiedLog``) and ``LogSegment`` with their indexes
(``OffsetIndex``, ``TimeIndex``, ``TransactionIndex``, ``LeaderEpochFileCache``), ``LogManager``,
``LogConfig``, ``LogValidator`` (``log_validator`` with its compiled half
``log_validator_core``), producer state, and the ``LogCleaner``.  See docs/broker/log.rst,
docs/broker/idempotence.rst and docs/broker/log_cleaner.rst.

May import: ``kafkacore.broker.server_common``, the compiled core, the protocol and the errors.
"""

from kafkacore.broker.log.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchDataInfo,
    Log,
    LogAppendInfo,
)
from kafkacore.broker.log.log_config import LogConfig
from kafkacore.broker.log.log_manager import LogManager
from kafkacore.broker.log.log_segment import LogSegment
from kafkacore.broker.log.offset_index import OffsetIndex
from kafkacore.broker.log.producer_id import ProducerIdManager
from kafkacore.broker.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "BatchMetadata",
    "FetchDataInfo",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "OffsetIndex",
    "ProducerIdManager",
    "ProducerStateEntry",
    "ProducerStateManager",
]
