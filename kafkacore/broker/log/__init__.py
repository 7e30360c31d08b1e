"""The broker's log on disk: segments, index, recovery, and producer state for idempotence.

See docs/broker/log.rst and docs/broker/idempotence.rst.
"""

from kafkacore.broker.log.config import LogConfig
from kafkacore.broker.log.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchDataInfo,
    Log,
    LogAppendInfo,
)
from kafkacore.broker.log.manager import LogManager
from kafkacore.broker.log.producer_id import ProducerIdManager
from kafkacore.broker.log.producer_state import (
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)
from kafkacore.broker.log.segment import LogSegment, OffsetIndex

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
