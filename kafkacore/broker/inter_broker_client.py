"""A blocking client one broker thread uses to talk to another broker or the controller.

Kafka's ``BrokerBlockingSender`` (the replica fetcher's) and ``NodeToControllerChannelManager``
(heartbeats, AlterPartition) in one small class: one TCP connection, one request in flight,
every wait bounded by a socket timeout.  When the broker is isolated on purpose
(:class:`~kafkacore.broker.faults.FaultInjector`), the connection is closed and not re-opened
until the broker is healed.
"""

from __future__ import annotations

import itertools
import socket
import threading
from typing import Any

from kafkacore.protocol import codec


class InterBrokerClient:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0,
                 faults: Any = None) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.faults = faults
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._correlation = itertools.count(1)

    def _isolated(self) -> bool:
        return bool(self.faults is not None and self.faults.isolated)

    def send(self, api_key: int, version: int, body: dict[str, Any],
             timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request and wait (bounded) for its response; ``OSError`` on any failure,
        after which the connection is closed (the next call reconnects)."""
        with self._lock:
            if self._isolated():
                self._close_locked()
                raise ConnectionError(f"isolated: not connecting to {self.host}:{self.port}")
            try:
                if self._sock is None:
                    self._sock = socket.create_connection((self.host, self.port),
                                                          timeout=self.timeout_s)
                    self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock = self._sock
                sock.settimeout(timeout_s if timeout_s is not None else self.timeout_s)
                correlation_id = next(self._correlation)
                payload = b"".join(bytes(c) for c in codec.encode_request(
                    api_key, version, correlation_id, self.client_id, body))
                sock.sendall(len(payload).to_bytes(4, "big") + payload)
                size = int.from_bytes(_recv_exactly(sock, 4), "big")
                frame = _recv_exactly(sock, size)
                got, response = codec.decode_response(api_key, version, frame)
                if got != correlation_id:
                    raise ConnectionError(f"correlation id {got}, expected {correlation_id}")
                if self._isolated():  # isolated while waiting: drop the answer and the link
                    raise ConnectionError("isolated")
                return response
            except (OSError, ValueError) as exc:
                self._close_locked()
                if isinstance(exc, OSError):
                    raise
                raise ConnectionError(str(exc)) from exc

    def _close_locked(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def close(self) -> None:
        """Close the connection; may be called from another thread to abort a wait."""
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            self._close_locked()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)
