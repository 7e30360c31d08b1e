"""Type stubs for the compiled ``kafkacore.core.murmur2``."""

from typing_extensions import Buffer

def murmur2(data: Buffer) -> int:
    """Kafka's ``Utils.murmur2`` of ``data``, as a signed 32-bit int like Java's."""

def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: ``n & 0x7fffffff``."""

def partition_for_key(key_bytes: Buffer, num_partitions: int) -> int:
    """``to_positive(murmur2(key_bytes)) % num_partitions``, as the Java client computes it."""
