"""Type stub for kafkacore.core.compression (compiled)."""

CODEC_NAMES: tuple[str, ...]
LEVELS: dict[str, tuple[int, int, int]]
DEFAULT_MAX_DECOMPRESSED_BYTES: int
XERIAL_HEADER: bytes
LZ4_FRAME_HEADER: bytes

def compress_records(codec: int, data: bytes | bytearray | memoryview) -> bytes: ...
