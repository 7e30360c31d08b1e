"""kafkacore's exceptions.

Client-side errors are raised at the call that caused them.  Broker errors have one class per Kafka
error code (see ``for_code``); each says whether it is ``retriable``, so the Sender can decide
between retrying a batch and failing it.
"""

from __future__ import annotations


class KafkaError(Exception):
    """Base of every kafkacore exception."""

    #: Whether sending again may succeed (a transient condition on the broker or the network).
    retriable = False


class KafkaTimeoutError(KafkaError, TimeoutError):
    """A bounded wait ran out: metadata, buffer memory, delivery, flush or close."""

    retriable = True


class BufferExhaustedError(KafkaTimeoutError):
    """``BufferPool.allocate`` waited ``max.block.ms`` and no memory came free."""


class ConfigError(KafkaError, ValueError):
    """A setting is unknown, has a bad value, or conflicts with another setting."""


class IllegalStateError(KafkaError, RuntimeError):
    """An operation on an object in a state that forbids it (appending to a closed batch, ...)."""


class CorruptRecordError(KafkaError, ValueError):
    """Bytes that are not a valid record batch: bad magic, CRC mismatch, truncated, bad varint."""


class RecordTooLargeError(KafkaError, ValueError):
    """A record larger than ``max.request.size`` or ``buffer.memory``."""


class SerializationError(KafkaError, TypeError):
    """A key, value or header that is not bytes-like and has no serializer."""
