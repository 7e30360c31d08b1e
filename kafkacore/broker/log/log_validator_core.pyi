"""Type stubs for kafkacore.broker.log.log_validator_core (compiled)."""

from kafkacore.broker.log.log_validator import BatchHeader

def analyze(
    records: bytes | bytearray | memoryview, max_message_bytes: int, *, allow_control: bool = False,
    compacted: bool = False,
) -> list[BatchHeader]: ...

def assign_offsets(
    buf: bytearray | memoryview,
    headers: list[BatchHeader],
    first_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None,
) -> list[BatchHeader]: ...
