"""The message a confluent-kafka style ``on_delivery(err, msg)`` callback receives."""

from __future__ import annotations

from typing import Any

#: confluent-kafka's ``OFFSET_INVALID``: the offset of a message that was not written.
OFFSET_INVALID = -1001


class DeliveredMessage:
    """What confluent-kafka's ``Message`` offers a delivery callback, as methods.

    ``key()`` and ``value()`` are what was given to ``send()`` (before the serializers).
    A failed record has ``error()`` set, ``offset()`` :data:`OFFSET_INVALID`, and ``partition()``
    -1 if no partition was chosen.
    """

    __slots__ = ("_topic", "_key", "_value", "_headers", "_metadata", "_error")

    def __init__(self, topic: str, key: Any, value: Any, headers: Any, metadata: Any,
                 error: BaseException | None) -> None:
        self._topic, self._key, self._value, self._headers = topic, key, value, headers
        self._metadata, self._error = metadata, error

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._metadata.partition if self._metadata is not None else -1

    def offset(self) -> int:
        if self._error is not None or self._metadata is None:
            return OFFSET_INVALID
        return int(self._metadata.offset)

    def timestamp(self) -> int | None:
        return self._metadata.timestamp if self._metadata is not None else None

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def headers(self) -> Any:
        return self._headers

    def error(self) -> BaseException | None:
        return self._error

    def __len__(self) -> int:
        return len(self._value) if self._value is not None else 0

    def __repr__(self) -> str:
        return (f"DeliveredMessage(topic={self._topic!r}, partition={self.partition()}, "
                f"offset={self.offset()}, error={self._error!r})")
