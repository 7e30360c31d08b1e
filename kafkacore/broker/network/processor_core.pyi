"""Type stubs for kafkacore.broker.network.processor_core (compiled)."""

import collections
import socket
import threading
from typing import Any

from kafkacore.broker.network.request_channel import RequestChannel, Response
from kafkacore.broker.network.selector import Poller, Wakeup

RECV_CHUNK: int
READ_AHEAD: int
READ: int
WRITE: int
POLL_S: float

class KafkaChannel:
    id: str
    sock: socket.socket
    fd: int
    address: tuple[str, int]
    buffer: bytearray
    expected: int
    muted: bool
    sends: collections.deque[Any]
    last_active: float
    events: int
    listener: str
    tls: bool
    handshake_events: int
    authenticator: Any
    close_after_send: str | None
    reserved: int
    certificate_principal: str | None
    trailing_bytes_logged: bool
    readable_while_muted: bool
    write_lock: threading.Lock
    closed: bool
    def __init__(self, connection_id: str, sock: socket.socket, address: tuple[str, int],
                 listener: str = "PLAINTEXT") -> None: ...

class ProcessorCore:
    id: int
    channel: RequestChannel
    memory_pool: Any
    faults: Any
    max_request_size: int
    sasl_max_receive_size: int
    idle_s: float
    _poller: Poller
    _wakeup: Wakeup
    _wakeup_fd: int
    _running: bool
    _channels: collections.OrderedDict[str, KafkaChannel]
    _by_fd: dict[int, KafkaChannel]
    _responses: collections.deque[Response]
    _sleeping: bool
    _handlers_to_wake: list[Wakeup]
    _tls_pending: set[str]
    _memory_waiters: dict[str, KafkaChannel]
    _held: collections.deque[tuple[float, Response]]
    _throttled: dict[str, float]
    _delayed_closes: dict[str, tuple[float, str]]
    _new_connections: Any
    _authentication_results: Any
    _stats: collections.Counter[str]
    requests: int
    responses: int
    responses_written_by_handlers: int
    bytes_read: int
    bytes_written: int
    _requests_by_api: dict[int, int]
    _next_idle_check: float
    def enqueue_response(self, response: Response) -> None: ...
    def do_work(self) -> None: ...
    def process_new_responses(self) -> None: ...
    def held_responses(self) -> list[Response]: ...
    def process_response(self, response: Response) -> None: ...
    def poll(self, timeout_s: float = ...) -> None: ...
    def _wake_handlers(self) -> None: ...
    def _read(self, ch: KafkaChannel) -> None: ...
    def _release_memory(self, ch: KafkaChannel) -> None: ...
    def _write(self, ch: KafkaChannel) -> None: ...
    def _wrote(self, ch: KafkaChannel, sent: int) -> None: ...
    def _sent(self, ch: KafkaChannel) -> None: ...
    def _unmute(self, ch: KafkaChannel) -> None: ...
    def _touch(self, ch: KafkaChannel) -> None: ...
    def _update_interest(self, ch: KafkaChannel) -> None: ...
