"""Type stubs for kafkacore.broker.network.response_encoder (compiled)."""

from typing import Any

PRODUCE_VERSIONS: range

def encode_produce_response(version: int, correlation_id: int, body: Any) -> bytes | None: ...

FETCH_VERSIONS: range

def encode_fetch_response(version: int, correlation_id: int, body: Any) -> list[Any] | None: ...
