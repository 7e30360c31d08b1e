"""Type stubs for kafkacore.core.appender (compiled)."""

from collections.abc import Callable
from typing import Any, final

from kafkacore.core.batch import BatchFuture, FutureRecordMetadata
from kafkacore.core.partition_map import CopyOnWriteMap
from kafkacore.core.record_sizes import Headers

def monotonic_ms() -> int: ...

@final
class PartitionQueue:
    batches: Any  # collections.deque[ProducerBatch]
    def __enter__(self) -> PartitionQueue: ...
    def __exit__(self, *exc_info: object) -> bool: ...

@final
class CurrentCluster:
    cluster: Any
    def __init__(self, cluster: Any = None) -> None: ...

@final
class ClosedFlag:
    is_set: bool

@final
class RecordAppender:
    closed: bool
    def __init__(
        self,
        *,
        batches: CopyOnWriteMap[Any, Any],
        accumulator: Any,
        metadata: Any,
        wait_on_metadata: Callable[[str, int | None], Any],
        wakeup: Callable[[], object],
        key_serializer: Callable[[str, Any], Any] | None,
        value_serializer: Callable[[str, Any], Any] | None,
        custom_partitioner: Callable[..., int] | None,
        ignore_keys: bool,
        max_request_size: int,
        total_memory: int,
        max_block_ms: int,
        sticky_factory: Callable[[str], Any],
    ) -> None: ...
    def append(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Headers | None,
        callback: Callable[..., object] | None,
    ) -> FutureRecordMetadata: ...
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
        callback: Callable[..., object] | None = None,
        *,
        on_delivery: Callable[..., object] | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata: ...
    def append_columns(
        self,
        topic: str,
        values: Any,
        keys: Any = None,
        partitions: Any = None,
        timestamps: Any = None,
        headers: Any = None,
    ) -> BatchFuture: ...

@final
class QueuedRecord:
    def __await__(self) -> QueuedRecord: ...
    def __next__(self) -> Any: ...
    def send(self, value: object) -> Any: ...
    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any: ...
    def close(self) -> None: ...

@final
class AsyncSend:
    def __init__(
        self,
        appender: RecordAppender,
        append_waiting: Callable[..., Any],
        would_wait: tuple[type[BaseException], ...],
    ) -> None: ...
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> QueuedRecord | Any: ...
