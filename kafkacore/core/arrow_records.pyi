"""Type stub for kafkacore.core.arrow_records (compiled)."""

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
from typing_extensions import Buffer

class DecodedRecords:
    @property
    def key(self) -> pa.BinaryArray: ...
    @property
    def value(self) -> pa.BinaryArray: ...
    @property
    def offset(self) -> pa.Int64Array: ...
    @property
    def timestamp(self) -> pa.TimestampArray: ...
    @property
    def timestamp_type(self) -> pa.Int32Array: ...
    @property
    def headers(self) -> pa.ListArray | None: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def reached_end(self) -> bool: ...
    @property
    def aborted_batches(self) -> int: ...
    @property
    def control_batches(self) -> int: ...

def decode_records(
    data: Buffer,
    start: int,
    end: int = ...,
    aborted_transactions: Iterable[Mapping[str, Any] | tuple[int, int]] | None = None,
    *,
    read_committed: bool = False,
    include_headers: bool = False,
    max_rows: int | None = None,
    max_decompressed_bytes: int = ...,
) -> DecodedRecords: ...
def batch_ends(data: Buffer) -> int: ...
def constant_columns(
    topic: str, partition: int, n: int
) -> tuple[pa.StringArray, pa.Int32Array]: ...
