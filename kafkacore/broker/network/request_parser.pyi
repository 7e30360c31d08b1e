"""Type stubs for kafkacore.broker.network.request_parser (compiled)."""

from typing import Any

from kafkacore.protocol.codec import Buffer

PRODUCE_VERSIONS: range

def decode_request_header(frame: Buffer, flexible: bool) -> tuple[dict[str, Any], int]: ...
def decode_produce_request(frame: Buffer, offset: int, version: int) -> tuple[dict[str, Any], int]: ...
def parse_request(frame: Buffer) -> tuple[dict[str, Any], dict[str, Any] | None, int]: ...
