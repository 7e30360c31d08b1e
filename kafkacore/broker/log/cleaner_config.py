"""``CleanerConfig``: the log cleaner's broker settings (Kafka's ``CleanerConfig``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DOUBLE_MAX = 1.7976931348623157e308


@dataclass(frozen=True)
class CleanerConfig:
    """Kafka 4's defaults; each field names its broker setting."""

    #: ``log.cleaner.threads``
    num_threads: int = 1
    #: ``log.cleaner.dedupe.buffer.size``: the offset maps' memory, all threads together
    dedupe_buffer_size: int = 128 * 1024 * 1024
    #: ``log.cleaner.io.buffer.load.factor``: how full an offset map may get
    dedupe_buffer_load_factor: float = 0.9
    #: ``log.cleaner.io.buffer.size``: bytes read from a segment at a time
    io_buffer_size: int = 512 * 1024
    #: ``log.cleaner.io.max.bytes.per.second``: Kafka's default is no limit
    max_io_bytes_per_second: float = DOUBLE_MAX
    #: ``log.cleaner.backoff.ms``: a thread's sleep when no log needs cleaning
    backoff_ms: int = 15_000
    #: ``log.cleaner.enable``
    enable_cleaner: bool = True

    @classmethod
    def from_broker_config(cls, c: Any) -> CleanerConfig:
        """From a :class:`~kafkacore.broker.config.kafka_config.BrokerConfig`."""
        return cls(
            num_threads=c["log.cleaner.threads"],
            dedupe_buffer_size=c["log.cleaner.dedupe.buffer.size"],
            dedupe_buffer_load_factor=c["log.cleaner.io.buffer.load.factor"],
            io_buffer_size=c["log.cleaner.io.buffer.size"],
            max_io_bytes_per_second=c["log.cleaner.io.max.bytes.per.second"],
            backoff_ms=c["log.cleaner.backoff.ms"],
            enable_cleaner=c["log.cleaner.enable"],
        )
