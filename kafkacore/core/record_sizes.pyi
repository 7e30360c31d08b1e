"""Type stub for kafkacore.core.record_sizes (compiled)."""

from collections.abc import Iterable, Mapping, Sequence

from typing_extensions import Buffer

Headers = (Sequence[tuple[str, str | Buffer | None]] | Iterable[tuple[str, str | Buffer | None]]
           | Mapping[str, str | Buffer | None])

def estimate_size_upper_bound(
    key: Buffer | None, value: Buffer | None, headers: Headers | None = None
) -> int: ...
def normalize_headers(headers: Headers | None) -> tuple[tuple[str, bytes | None], ...] | None: ...
